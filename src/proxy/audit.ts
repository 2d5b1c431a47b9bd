/**
 * The proxy's audit trail: one row per request (refusals and 401s included), written off the
 * hot path in batches, bounded by rows and by age. Token totals per task are running
 * counters beside it, so they survive the trail's eviction. Nothing secret is ever written:
 * a credential appears by its label only, and a Cursor path without its placeholder segment.
 */
import type { Database } from "bun:sqlite";
import type { Counts } from "./usage";
import type { Logger } from "../util/log";
import type { ToWriter, FromWriter } from "./audit-writer";
import { workerUrl } from "./worker-url";

export interface Row {
  at: number;
  taskId: string | null;
  taskRef: string | null;
  role: string | null;
  profile: string | null;
  credential: string | null;
  upstream: string;
  method: string;
  path: string;
  status: number;
  durationMs: number;
  ttfbMs: number | null;
  bytesIn: number;
  bytesOut: number;
  usage: Counts | null;
  retries: number;
  note: string | null;
}

/** A row as the writer takes it: the audit table's columns in order (audit-writer.ts). */
export type Tuple = [
  at: number, taskId: string | null, taskRef: string | null, role: string | null, profile: string | null, credential: string | null,
  upstream: string, method: string, path: string, status: number, durationMs: number, ttfbMs: number | null, bytesIn: number, bytesOut: number,
  input: number | null, output: number | null, cacheRead: number | null, cacheWrite: number | null, retries: number, note: string | null,
];

/**
 * Milliseconds kept to the microsecond: finer is noise, and a full-precision double costs twice
 * as much to put through JSON on its way to the writer (and more room in the store).
 */
const us = (ms: number) => Math.round(ms * 1000) / 1000;

export function tuple(r: Row): Tuple {
  const u = r.usage;
  return [r.at, r.taskId, r.taskRef, r.role, r.profile, r.credential, r.upstream, r.method, r.path, r.status, us(r.durationMs), r.ttfbMs === null ? null : us(r.ttfbMs), r.bytesIn, r.bytesOut,
    u ? u.input : null, u ? u.output : null, u ? u.cacheRead : null, u ? u.cacheWrite : null, r.retries, r.note];
}

export interface Bounds {
  maxRows: number;
  maxAgeDays: number;
}

/**
 * Where rows are recorded, on the proxy's thread: queued, and handed on in batches (within
 * ~50 ms, or at 500 rows) as one JSON string of tuples — cloning a string across threads is a
 * copy, where cloning 500 objects cost as much as writing them.
 */
export class Recorder {
  private queue: Tuple[] = [];
  private timer: Timer | undefined;

  constructor(private sink: (rows: string) => void) {}

  record(row: Row): void {
    this.queue.push(tuple(row));
    if (this.queue.length >= 500) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 50);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    this.sink(JSON.stringify(rows));
  }
}

/**
 * The trail itself, on the daemon's main thread: batches from the proxy's thread go to the
 * writer thread (audit-writer.ts), and reads wait until everything recorded before them is in
 * the store — first what the proxy's thread still holds (`pending`), then the writer's queue.
 */
export class Audit {
  private pruneTimer: Timer;
  private writer!: Worker;
  private posted = 0;
  private written = 0;
  private waiters: { id: number; resolve: () => void }[] = [];
  private respawns = 0;

  constructor(
    private db: Database,
    private bounds: () => Bounds,
    private log: Logger,
    private pending: () => Promise<void> = async () => {},
  ) {
    this.spawn();
    this.pruneTimer = setInterval(() => this.post({ type: "prune", id: ++this.posted, bounds: this.bounds() }), 60_000);
    this.pruneTimer.unref();
  }

  private spawn(): void {
    const writer = new Worker(workerUrl("audit-writer.ts"));
    (writer as unknown as { unref(): void }).unref(); // Bun's: the writer alone keeps no process alive
    writer.onmessage = (e: MessageEvent<FromWriter>) => {
      const m = e.data;
      if (m.error) this.log.error(`audit write failed: ${m.error}`);
      this.release(m.id);
    };
    // A writer that died takes what it was given with it: say so, let readers go on with what is
    // stored, and start another (a few times; after that the trail is off, and the log says so).
    writer.onerror = (e) => {
      this.log.error(`the audit writer failed: ${e.message}; rows posted to it may be lost`);
      this.release(this.posted);
      writer.terminate();
      if (this.respawns++ < 3) this.spawn();
      else this.log.error("the audit writer failed repeatedly: the audit trail is off until the daemon restarts");
    };
    this.writer = writer;
    this.writer.postMessage({ type: "open", path: this.db.filename } satisfies ToWriter);
  }

  private release(id: number): void {
    this.written = Math.max(this.written, id);
    this.waiters = this.waiters.filter((w) => (w.id <= this.written ? (w.resolve(), false) : true));
  }

  /** A batch of rows (a JSON array of tuples, from a Recorder): written in one transaction, off this thread. */
  write(rows: string): void {
    this.post({ type: "rows", id: ++this.posted, rows, bounds: this.bounds() });
  }

  /** Resolves once every row recorded so far is in the store. */
  async settled(): Promise<void> {
    await this.pending();
    if (this.written >= this.posted) return;
    return new Promise((resolve) => this.waiters.push({ id: this.posted, resolve }));
  }

  private post(m: ToWriter): void {
    if (this.respawns > 3) return this.release(this.posted);
    this.writer.postMessage(m);
  }

  async query(opts: { taskId?: string; limit?: number } = {}): Promise<(Row & { id: number })[]> {
    await this.settled();
    const limit = opts.limit ?? 100;
    const rows = (
      opts.taskId
        ? this.db.query("SELECT * FROM audit WHERE task_id = ? ORDER BY id DESC LIMIT ?").all(opts.taskId, limit)
        : this.db.query("SELECT * FROM audit ORDER BY id DESC LIMIT ?").all(limit)
    ) as Record<string, number | string | null>[];
    return rows.reverse().map((r) => ({
      id: r.id as number,
      at: r.at as number,
      taskId: r.task_id as string | null,
      taskRef: r.task_ref as string | null,
      role: r.role as string | null,
      profile: r.profile as string | null,
      credential: r.credential as string | null,
      upstream: r.upstream as string,
      method: r.method as string,
      path: r.path as string,
      status: r.status as number,
      durationMs: r.duration_ms as number,
      ttfbMs: r.ttfb_ms as number | null,
      bytesIn: r.bytes_in as number,
      bytesOut: r.bytes_out as number,
      usage: r.input_tokens === null && r.output_tokens === null ? null : { input: (r.input_tokens as number) ?? 0, output: (r.output_tokens as number) ?? 0, cacheRead: (r.cache_read as number) ?? 0, cacheWrite: (r.cache_write as number) ?? 0 },
      retries: r.retries as number,
      note: r.note as string | null,
    }));
  }

  async count(): Promise<number> {
    await this.settled();
    return (this.db.query("SELECT COUNT(*) AS n FROM audit").get() as { n: number }).n;
  }

  async totals(taskId: string): Promise<{ requests: number; input: number; output: number; cacheRead: number; cacheWrite: number }> {
    await this.settled();
    const r = this.db.query("SELECT * FROM task_tokens WHERE task_id = ?").get(taskId) as Record<string, number> | null;
    return { requests: r?.requests ?? 0, input: r?.input_tokens ?? 0, output: r?.output_tokens ?? 0, cacheRead: r?.cache_read ?? 0, cacheWrite: r?.cache_write ?? 0 };
  }

  /** Write what was posted, then let the writer go. */
  async stop(): Promise<void> {
    clearInterval(this.pruneTimer);
    this.post({ type: "close", id: ++this.posted });
    const last = new Promise<void>((resolve) => this.waiters.push({ id: this.posted, resolve }));
    await Promise.race([last, Bun.sleep(5000)]);
    this.writer.terminate();
  }
}
