/**
 * The proxy's audit trail: one row per request (refusals and 401s included), written off the
 * hot path in batches, bounded by rows and by age. Token totals per task are running
 * counters beside it, so they survive the trail's eviction. Nothing secret is ever written:
 * a credential appears by its label only, and a Cursor path without its placeholder segment.
 */
import type { Database } from "bun:sqlite";
import type { Counts } from "./usage";
import type { Logger } from "../util/log";

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

export interface Bounds {
  maxRows: number;
  maxAgeDays: number;
}

export class Audit {
  private queue: Row[] = [];
  private timer: Timer | undefined;
  private pruneTimer: Timer;
  private sinceBound = 0;

  constructor(
    private db: Database,
    private bounds: () => Bounds,
    private log: Logger,
  ) {
    this.pruneTimer = setInterval(() => this.prune(), 60_000);
    this.pruneTimer.unref();
  }

  /** Queue a row; it is written within ~50 ms, with others, in one transaction. */
  record(row: Row): void {
    this.queue.push(row);
    if (this.queue.length >= 500) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), 50);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.queue.length) return;
    const rows = this.queue;
    this.queue = [];
    try {
      const insert = this.db.query(
        `INSERT INTO audit (at, task_id, task_ref, role, profile, credential, upstream, method, path, status, duration_ms, ttfb_ms, bytes_in, bytes_out,
           input_tokens, output_tokens, cache_read, cache_write, retries, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      const count = this.db.query(
        `INSERT INTO task_tokens (task_id, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, 1, ?, ?, ?, ?)
         ON CONFLICT(task_id) DO UPDATE SET requests = requests + 1, input_tokens = input_tokens + excluded.input_tokens,
           output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`,
      );
      this.db.transaction(() => {
        for (const r of rows) {
          const u = r.usage;
          insert.run(r.at, r.taskId, r.taskRef, r.role, r.profile, r.credential, r.upstream, r.method, r.path, r.status, r.durationMs, r.ttfbMs, r.bytesIn, r.bytesOut,
            u?.input ?? null, u?.output ?? null, u?.cacheRead ?? null, u?.cacheWrite ?? null, r.retries, r.note);
          if (r.taskId) count.run(r.taskId, u?.input ?? 0, u?.output ?? 0, u?.cacheRead ?? 0, u?.cacheWrite ?? 0);
        }
      }).immediate();
      this.sinceBound += rows.length;
      // Keep within the row bound without a COUNT per batch: trim once a tenth of it has arrived.
      if (this.sinceBound >= Math.max(10, this.bounds().maxRows / 10)) this.prune();
    } catch (e) {
      this.log.error(`audit write failed (${rows.length} rows lost): ${(e as Error).message}`);
    }
  }

  prune(): void {
    this.sinceBound = 0;
    const { maxRows, maxAgeDays } = this.bounds();
    const cutoff = Date.now() - maxAgeDays * 86_400_000;
    this.db.transaction(() => {
      this.db.query("DELETE FROM audit WHERE at < ?").run(cutoff);
      this.db.query("DELETE FROM audit WHERE id <= (SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?)").run(maxRows);
    }).immediate();
  }

  query(opts: { taskId?: string; limit?: number } = {}): (Row & { id: number })[] {
    this.flush();
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

  count(): number {
    this.flush();
    return (this.db.query("SELECT COUNT(*) AS n FROM audit").get() as { n: number }).n;
  }

  totals(taskId: string): { requests: number; input: number; output: number; cacheRead: number; cacheWrite: number } {
    this.flush();
    const r = this.db.query("SELECT * FROM task_tokens WHERE task_id = ?").get(taskId) as Record<string, number> | null;
    return { requests: r?.requests ?? 0, input: r?.input_tokens ?? 0, output: r?.output_tokens ?? 0, cacheRead: r?.cache_read ?? 0, cacheWrite: r?.cache_write ?? 0 };
  }

  stop(): void {
    clearInterval(this.pruneTimer);
    this.flush();
  }
}
