/**
 * Usage-limit readings: the latest allowlisted rate-limit headers per credential owner,
 * held in memory for `lazy stats limits` and persisted (debounced) so they survive a restart.
 */
import type { Database } from "bun:sqlite";
import { Readings } from "../../store";
import * as Log from "../../util/log";
import type { Refusal } from "./quota";
import { type Window, windows } from "./readings";

const log = Log.create("proxy");

export interface Reading {
  owner: string;
  credential: string | null;
  upstream: string;
  /** Epoch ms: formatted when shown, not on every request. */
  at: number;
  status: number;
  headers: Record<string, string>;
  /** The latest quota refusal for this credential, until its reset passes. */
  quota: Quota | null;
}

export interface Quota {
  /** Epoch ms of the refusal, and of the reset when the provider said (null: unknown). */
  at: number;
  window: string | null;
  resetsAt: number | null;
  detail: string;
}

export interface LimitView extends Omit<Reading, "at" | "quota"> {
  /** ISO 8601 */
  at: string;
  windows: Window[];
  /** A quota refusal whose reset has not passed (times ISO 8601). */
  quota: { at: string; window: string | null; resetsAt: string | null; detail: string } | null;
}

/**
 * When a quota refusal resets: when the provider named no reset time
 * (OpenAI's insufficient_quota), an hour after it. spending/pause.ts holds turns until then.
 */
export const UNKNOWN_RESET_MS = 3_600_000;
const resetOf = (q: Quota) => q.resetsAt ?? q.at + UNKNOWN_RESET_MS;

export class Limits {
  private latest = new Map<string, Reading>();
  private dirty = new Set<string>();
  private timer: Timer | undefined;

  constructor(private db: Database) {
    for (const r of Readings.all(db))
      this.latest.set(r.owner, {
        owner: r.owner,
        credential: r.credential,
        upstream: r.upstream,
        at: r.at,
        status: r.status,
        headers: JSON.parse(r.headers),
        quota: r.quota ? (JSON.parse(r.quota) as Quota) : null,
      });
  }

  /** Record a reading; a response with no allowlisted header leaves the last one standing. */
  record(owner: string, credential: string | null, upstream: string, status: number, headers: Record<string, string>): void {
    if (Object.keys(headers).length === 0) {
      // A credential seen answering without limit headers still gets a row: "no reading", never 0 %.
      if (this.latest.has(owner)) return;
    }
    this.latest.set(owner, { owner, credential, upstream, at: Date.now(), status, headers, quota: this.latest.get(owner)?.quota ?? null });
    this.changed(owner);
  }

  /** A provider refused this credential: a quota refusal is kept until its reset. */
  refused(owner: string, refusal: Refusal, now = Date.now()): void {
    const r = this.latest.get(owner);
    if (!r || refusal.kind !== "quota") return;
    r.quota = { at: now, window: refusal.window, resetsAt: refusal.resetsAt, detail: refusal.detail };
    this.changed(owner);
  }

  private changed(owner: string): void {
    this.dirty.add(owner);
    this.timer ??= setTimeout(() => {
      // On a timer nothing would catch it: a store busy past its timeout costs one flush, not the thread.
      try {
        this.flush();
      } catch (e) {
        log.warn(`usage readings not saved this time: ${(e as Error).message}`);
      }
    }, 200);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.dirty.size) return;
    const owners = [...this.dirty];
    this.dirty.clear();
    const readings: Readings.Stored[] = [];
    for (const o of owners) {
      const r = this.latest.get(o);
      if (r) readings.push({ ...r, headers: JSON.stringify(r.headers), quota: r.quota ? JSON.stringify(r.quota) : null });
    }
    Readings.save(this.db, readings);
  }

  list(now = Date.now()): LimitView[] {
    return [...this.latest.values()]
      .sort((a, b) => a.owner.localeCompare(b.owner))
      .map((r) => ({
        ...r,
        at: new Date(r.at).toISOString(),
        windows: windows(r.headers, now),
        quota:
          r.quota && resetOf(r.quota) > now
            ? { ...r.quota, at: new Date(r.quota.at).toISOString(), resetsAt: new Date(resetOf(r.quota)).toISOString() }
            : null,
      }));
  }

  stop(): void {
    this.flush();
  }
}
