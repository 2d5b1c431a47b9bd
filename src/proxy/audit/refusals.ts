/**
 * Refusals of callers lazy cannot attribute to a task or a host grant, counted rather than
 * written as rows. Such a caller's credential redeems nothing lazy can vouch for: it presented
 * none, an unknown or revoked placeholder, a credential of its own from off this machine, a
 * placeholder beside another credential, a task's placeholder while no turn of that task runs,
 * or one from an address it is not pinned to (on the Cursor route also a malformed route or a
 * placeholder on the host-login route; on the MCP route a token missing, unknown or off its
 * pin; at the egress proxy a source no grant names). Anyone who reaches a listener can send
 * those by the hundred thousand; as rows they pushed every task's real rows out of the trail's
 * bound. Counted per minute, source address, reason, status (and the task a presented
 * placeholder named), they cost a map increment on the proxy's thread, travel with the
 * batches, and are stored under a bound of their own (store/audit-refusals.ts). Every request
 * that got past the caller check (a surface refusal, a budget stop, an upstream's 401) stays a
 * row of the task or host grant that made it.
 */
import type { AuditRefusals } from "../../store";

/** One refused request, as the proxy's thread knows it. */
export interface Refusal {
  at: number;
  /** The address it came from. */
  from: string;
  /** Why: the note its row would have carried. */
  reason: string;
  status: number;
  /** The task a presented placeholder named (lazy does not vouch that the caller is that task's). */
  taskId: string | null;
  taskRef: string | null;
  method: string;
  path: string;
}

/** Counts since the last hand-over, as stored: one line per minute, source, reason, status and task. */
export type Tally = AuditRefusals.Line[];

/** Keys a thread holds between hand-overs at most: past it, it hands them on at once. */
export const TALLY_KEYS = 1000;

/** The minute (ms at its start) a time falls in. */
export const minuteOf = (at: number): number => at - (at % 60_000);

/** What one proxy thread counted since it last handed its counts on. */
export class Counter {
  private lines = new Map<string, AuditRefusals.Line>();

  /** Count one; true once the counter holds TALLY_KEYS keys (hand them on). */
  add(r: Refusal): boolean {
    const minute = minuteOf(r.at);
    const key = `${minute}\u0000${r.status}\u0000${r.from}\u0000${r.taskId ?? ""}\u0000${r.reason}`;
    const l = this.lines.get(key);
    if (l) {
      l.count++;
      l.lastAt = r.at;
      return false;
    }
    this.lines.set(key, {
      minute,
      source: r.from,
      reason: r.reason,
      status: r.status,
      taskId: r.taskId ?? "",
      taskRef: r.taskRef ?? "",
      count: 1,
      firstAt: r.at,
      lastAt: r.at,
      method: r.method,
      path: r.path,
    });
    return this.lines.size >= TALLY_KEYS;
  }

  /** The counts so far (none if empty); the counter starts again. */
  take(): Tally | undefined {
    if (!this.lines.size) return undefined;
    const tally = [...this.lines.values()];
    this.lines.clear();
    return tally;
  }
}

/** The counted lines' own bound (`[proxy.audit] max_refusal_lines`); their age bound is the trail's. */
export interface Bounds {
  maxRefusals: number;
}
