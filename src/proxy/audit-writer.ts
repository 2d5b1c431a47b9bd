/**
 * The audit trail's writer, on a worker thread: it owns a connection of its own to the store
 * and does the SQLite work (inserts, token counters, WAL checkpoints, pruning), which on the
 * proxy's thread cost about a tenth of each request. The proxy's thread queues rows and posts
 * them here in batches; readers first wait until what they posted is written (audit.ts).
 */
import { Database } from "bun:sqlite";
import type { Row, Bounds } from "./audit";

export type ToWriter = { type: "open"; path: string } | { type: "rows"; id: number; rows: string; bounds: Bounds } | { type: "prune"; id: number; bounds: Bounds } | { type: "close"; id: number };
export type FromWriter = { type: "done"; id: number; error?: string };

declare const self: Worker;

let db: Database | undefined;
let sinceBound = 0;

function write(rows: Row[], bounds: Bounds): void {
  const d = db!;
  const insert = d.query(
    `INSERT INTO audit (at, task_id, task_ref, role, profile, credential, upstream, method, path, status, duration_ms, ttfb_ms, bytes_in, bytes_out,
       input_tokens, output_tokens, cache_read, cache_write, retries, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const count = d.query(
    `INSERT INTO task_tokens (task_id, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, 1, ?, ?, ?, ?)
     ON CONFLICT(task_id) DO UPDATE SET requests = requests + 1, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`,
  );
  d.transaction(() => {
    for (const r of rows) {
      const u = r.usage;
      insert.run(r.at, r.taskId, r.taskRef, r.role, r.profile, r.credential, r.upstream, r.method, r.path, r.status, r.durationMs, r.ttfbMs, r.bytesIn, r.bytesOut,
        u?.input ?? null, u?.output ?? null, u?.cacheRead ?? null, u?.cacheWrite ?? null, r.retries, r.note);
      if (r.taskId) count.run(r.taskId, u?.input ?? 0, u?.output ?? 0, u?.cacheRead ?? 0, u?.cacheWrite ?? 0);
    }
  }).immediate();
  sinceBound += rows.length;
  // Keep within the row bound without a COUNT per batch: trim once a tenth of it has arrived.
  if (sinceBound >= Math.max(10, bounds.maxRows / 10)) prune(bounds);
}

function prune({ maxRows, maxAgeDays }: Bounds): void {
  sinceBound = 0;
  const d = db!;
  const cutoff = Date.now() - maxAgeDays * 86_400_000;
  d.transaction(() => {
    d.query("DELETE FROM audit WHERE at < ?").run(cutoff);
    d.query("DELETE FROM audit WHERE id <= (SELECT id FROM audit ORDER BY id DESC LIMIT 1 OFFSET ?)").run(maxRows);
  }).immediate();
}

self.onmessage = (e: MessageEvent<ToWriter>) => {
  const m = e.data;
  if (m.type === "open") {
    db = new Database(m.path, { strict: true });
    // The proxy's thread writes tasks and events on its own connection: wait for it, not fail.
    db.exec("PRAGMA busy_timeout = 5000");
    db.exec("PRAGMA synchronous = NORMAL");
    return;
  }
  let error: string | undefined;
  try {
    if (m.type === "rows") write(JSON.parse(m.rows) as Row[], m.bounds);
    else if (m.type === "prune") prune(m.bounds);
    else {
      db?.close();
      db = undefined;
    }
  } catch (err) {
    error = `${m.type === "rows" ? "a batch of audit rows was lost: " : ""}${(err as Error).message}`;
  }
  postMessage({ type: "done", id: m.id, ...(error ? { error } : {}) } satisfies FromWriter);
};
