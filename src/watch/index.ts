/**
 * One live feed of everything lazy sees: every task's events (status changes, messages, tool
 * calls, results) and the proxy's traffic, as items a terminal (`lazy watch`) or the
 * dashboard prints. A backlog since a time comes first, then what happens, as it happens.
 *
 * Task events come from the store, woken by the bus; traffic comes from the audit trail's
 * live rows (within ~50 ms of the answer). A refusal carries its cause. A Cursor route's
 * placeholder segment never reaches the audit, so never reaches here. Refusals of callers lazy
 * cannot attribute arrive counted (proxy/audit/refusals.ts): the first of each minute, source,
 * reason and status is a net> line (at most FIRST_LINES a minute), the rest one `refused`
 * line with the minute's count once the minute is over, so 105,000 refusals are two lines.
 */
import type { Database } from "bun:sqlite";
import type { Bus } from "../bus";
import type { ExpiryNotice, ExpiryWarnings } from "../credentials";
import { type AuditRefusalTally, type AuditRow, refusalCause } from "../proxy";
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
  /** Refusals of callers lazy cannot attribute, counted: one line per minute, source, reason and status (proxy/audit/refusals.ts). */
  | {
      type: "refused";
      at: string;
      /** The minute they fell in (its start). */
      minute: string;
      /** The task whose placeholder they presented, if any (lazy does not vouch the caller is its). */
      task: TaskTag | null;
      from: string;
      reason: string;
      status: number;
      count: number;
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
    refusals(o: { since?: number; limit?: number }): Promise<AuditRefusalTally>;
    onRefused(l: (tally: AuditRefusalTally) => void): () => void;
  } | null;
  proxyProblem: () => string | null;
  /** OAuth tokens about to lapse: those known when the feed starts, then each new one. */
  expiry?: Pick<ExpiryWarnings, "notices" | "on"> | undefined;
}

const expiryItem = (n: ExpiryNotice): WatchItem => ({ type: "expiry", at: new Date().toISOString(), ...n });

const BACKLOG_ROWS = 5_000;
/** Refusals of unattributed callers shown as net> lines in a minute, one per source, reason and status; the rest are counted. */
const FIRST_LINES = 50;

type Counted = AuditRefusalTally[number];

/** A counted line as a watch item (its count: `count`). */
export function refusedItem(l: Counted, codeOf: (id: string) => string | null, count = l.count): WatchItem {
  return {
    type: "refused",
    at: new Date(l.lastAt).toISOString(),
    minute: new Date(l.minute).toISOString(),
    task: l.taskId ? { id: l.taskId, code: codeOf(l.taskId) ?? (l.taskRef !== l.taskId ? l.taskRef : null) } : null,
    from: l.source,
    reason: l.reason,
    status: l.status,
    count,
  };
}

/** The first refusal a counted line holds, as the net> line its row would have been. */
const firstOf = (l: Counted, codeOf: (id: string) => string | null): WatchItem =>
  netItem(
    {
      at: l.firstAt,
      taskId: l.taskId || null,
      taskRef: l.taskRef || null,
      role: null,
      profile: null,
      credential: null,
      upstream: "",
      method: l.method,
      path: l.path,
      status: l.status,
      durationMs: 0,
      ttfbMs: null,
      bytesIn: 0,
      bytesOut: 0,
      usage: null,
      retries: 0,
      note: l.reason,
      hop: 0,
      lazyInMs: null,
      lazyOutMs: null,
    },
    codeOf,
  );

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
  // Counted refusals: the first of a key in its minute as a net> line, the minute's count after it.
  const counting = new Map<string, { line: Counted; count: number; shown: boolean }>();
  const firsts = new Map<number, number>();
  const offRefused = src.audit?.onRefused((tally) => {
    for (const l of tally) {
      if (!wanted(l.taskId || null)) continue;
      const key = `${l.minute}\u0000${l.status}\u0000${l.source}\u0000${l.taskId}\u0000${l.reason}`;
      const c = counting.get(key);
      if (c) {
        c.count += l.count;
        c.line = { ...c.line, lastAt: Math.max(c.line.lastAt, l.lastAt) };
        continue;
      }
      const shown = (firsts.get(l.minute) ?? 0) < FIRST_LINES;
      if (shown) {
        firsts.set(l.minute, (firsts.get(l.minute) ?? 0) + 1);
        out(firstOf(l, codeOf));
      }
      counting.set(key, { line: l, count: l.count, shown });
    }
  });
  // A minute over: its counts, where more came than its first line showed.
  const closeMinutes = () => {
    const open = Date.now() - 60_000;
    for (const [key, c] of counting)
      if (c.line.minute <= open) {
        counting.delete(key);
        if (c.count > (c.shown ? 1 : 0)) out(refusedItem(c.line, codeOf, c.count));
      }
    for (const m of firsts.keys()) if (m <= open) firsts.delete(m);
  };
  const closer = setInterval(closeMinutes, 5_000);
  closer.unref?.();

  if (opts.since !== null) {
    const backlog: WatchItem[] = Tasks.feed(src.db, { since: opts.since, taskIds: ids ? [...ids] : null })
      .filter((e) => e.id <= after)
      .map(eventItem);
    if (src.audit) {
      for (const r of await src.audit.query({ since: opts.since, limit: BACKLOG_ROWS }).catch(() => []))
        if (wanted(r.taskId)) backlog.push(netItem(r, codeOf));
      for (const l of await src.audit.refusals({ since: opts.since, limit: BACKLOG_ROWS }).catch(() => []))
        if (wanted(l.taskId || null)) backlog.push(refusedItem(l, codeOf));
    }
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
    offRefused?.();
    clearInterval(closer);
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
