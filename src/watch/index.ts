/**
 * One live feed of everything lazy sees: every task's events (status changes, messages, tool
 * calls, results) and the proxy's traffic, as items a terminal (`lazy watch`) or the
 * dashboard prints. A backlog since a time comes first, then what happens, as it happens.
 *
 * Task events come from the store, woken by the bus; traffic comes from the audit trail's
 * live rows (within ~50 ms of the answer). A refusal carries its cause. A Cursor route's
 * placeholder segment never reaches the audit, so never reaches here.
 */
import type { Database } from "bun:sqlite";
import type { Bus } from "../bus";
import type { ExpiryNotice, ExpiryWarnings } from "../credentials";
import { type AuditRow, refusalCause } from "../proxy";
import { type TaskEvent, Tasks } from "../store";

export interface TaskTag {
  id: string;
  code: string | null;
}

export type WatchItem =
  | { type: "hello"; at: string; proxy: string | null; tasks: TaskTag[] | null; since: string | null }
  | { type: "event"; at: string; task: TaskTag; kind: string; data: Record<string, unknown>; id: number }
  | {
      type: "net";
      at: string;
      task: TaskTag | null;
      role: string | null;
      profile: string | null;
      credential: string | null;
      method: string;
      path: string;
      status: number;
      durationMs: number;
      input: number | null;
      output: number | null;
      refused: string | null;
      note: string | null;
      /** Which hop of a rerouted request ([[proxy.fallback]]): 0 the upstream it was meant for. */
      hop: number;
      upstream: string;
    }
  | { type: "dropped"; at: string; count: number }
  /** An OAuth token that lapses within a day, or has lapsed (credentials/expiry-warnings.ts). */
  | { type: "expiry"; at: string; credential: string; expiresAt: string; expired: boolean; message: string };

export interface WatchSource {
  db: Database;
  bus: Pick<Bus, "subscribe">;
  /** The proxy's audit trail, or null when the proxy is unavailable (and why). */
  audit: {
    query(o: { since?: number; limit?: number }): Promise<(AuditRow & { id: number })[]>;
    onRows(l: (rows: AuditRow[]) => void): () => void;
  } | null;
  proxyProblem: () => string | null;
  /** OAuth tokens about to lapse: those known when the feed starts, then each new one. */
  expiry?: Pick<ExpiryWarnings, "notices" | "on"> | undefined;
}

const expiryItem = (n: ExpiryNotice): WatchItem => ({ type: "expiry", at: new Date().toISOString(), ...n });

const BACKLOG_ROWS = 5_000;

/** A row of the audit as a watch line's data. */
export function netItem(r: AuditRow, codeOf: (id: string) => string | null): WatchItem {
  return {
    type: "net",
    at: new Date(r.at).toISOString(),
    task: r.taskId ? { id: r.taskId, code: codeOf(r.taskId) ?? (r.taskRef !== r.taskId ? r.taskRef : null) } : null,
    role: r.role,
    profile: r.profile,
    credential: r.credential,
    method: r.method,
    path: r.path,
    status: r.status,
    durationMs: Math.round(r.durationMs),
    input: r.usage ? r.usage.input + r.usage.cacheRead + r.usage.cacheWrite : null,
    output: r.usage ? r.usage.output : null,
    refused: refusalCause(r),
    note: r.note,
    hop: r.hop,
    upstream: r.upstream,
  };
}

const eventItem = (e: TaskEvent & { code: string | null }): WatchItem => ({
  type: "event",
  at: e.at,
  task: { id: e.taskId, code: e.code },
  kind: e.kind,
  data: e.data,
  id: e.id,
});

/**
 * Follow the feed: `emit` gets the hello, the backlog since `since` (ms; null: none), then each
 * new item. `tasks` null means every task. Returns the function that stops following.
 */
export async function follow(
  src: WatchSource,
  opts: { tasks: TaskTag[] | null; since: number | null },
  emit: (item: WatchItem) => void,
): Promise<() => void> {
  const ids = opts.tasks ? new Set(opts.tasks.map((t) => t.id)) : null;
  const wanted = (taskId: string | null) => !ids || (taskId !== null && ids.has(taskId));
  const codes = new Map<string, string | null>();
  const codeOf = (id: string) => {
    if (!codes.has(id)) codes.set(id, Tasks.codeOf(src.db, id));
    return codes.get(id) ?? null;
  };
  const problem = src.audit ? src.proxyProblem() : (src.proxyProblem() ?? "the proxy is not running");
  emit({
    type: "hello",
    at: new Date().toISOString(),
    proxy: problem,
    tasks: opts.tasks,
    since: opts.since === null ? null : new Date(opts.since).toISOString(),
  });

  // The live parts subscribe before the backlog is read, and hold what arrives meanwhile.
  let after = Tasks.lastEventId(src.db);
  let held: WatchItem[] | null = [];
  const out = (item: WatchItem) => (held ? held.push(item) : emit(item));
  let scheduled = false;
  const drain = () => {
    scheduled = false;
    for (const e of Tasks.feed(src.db, { after, taskIds: ids ? [...ids] : null })) {
      after = e.id;
      out(eventItem(e));
    }
  };
  const unsubscribe = src.bus.subscribe((c) => {
    if (c.kind !== "task" || scheduled || !wanted(c.taskId)) return;
    scheduled = true;
    queueMicrotask(drain);
  });
  const offExpiry = src.expiry?.on((n) => out(expiryItem(n)));
  const offRows = src.audit?.onRows((rows) => {
    for (const r of rows) if (wanted(r.taskId)) out(netItem(r, codeOf));
  });

  if (opts.since !== null) {
    const backlog: WatchItem[] = Tasks.feed(src.db, { since: opts.since, taskIds: ids ? [...ids] : null })
      .filter((e) => e.id <= after)
      .map(eventItem);
    if (src.audit)
      for (const r of await src.audit.query({ since: opts.since, limit: BACKLOG_ROWS }).catch(() => []))
        if (wanted(r.taskId)) backlog.push(netItem(r, codeOf));
    backlog.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    for (const item of backlog) emit(item);
  }
  // What lapses soon comes before the backlog's end, so it is seen first thing.
  for (const n of src.expiry?.notices() ?? []) emit(expiryItem(n));
  const pending = held;
  held = null;
  for (const item of pending) emit(item);
  drain();
  return () => {
    unsubscribe();
    offRows?.();
    offExpiry?.();
  };
}

/** The feed's source from the daemon's parts: the audit only while the proxy is up, else why not. */
export function sourceOf(d: {
  db: Database;
  bus: Pick<Bus, "subscribe">;
  proxy: { state: string; error?: string; audit: NonNullable<WatchSource["audit"]> };
  expiry?: WatchSource["expiry"];
}): WatchSource {
  return {
    db: d.db,
    bus: d.bus,
    expiry: d.expiry,
    audit: d.proxy.state === "ready" ? d.proxy.audit : null,
    proxyProblem: () =>
      d.proxy.state === "ready"
        ? null
        : d.proxy.state === "starting"
          ? "the proxy is starting"
          : `the proxy is unavailable: ${d.proxy.error ?? "it failed to start"}`,
  };
}
