/**
 * The audit trail's writer, on a worker thread: it owns a connection of its own to the store
 * and does the SQLite work (inserts, token counters, WAL checkpoints, pruning), which on the
 * proxy's thread cost about a tenth of each request. The proxy's thread queues rows and posts
 * them here in batches; readers first wait until what they posted is written (audit.ts).
 */
import { Database } from "bun:sqlite";
import type { Tuple, Bounds } from "./audit";

export type ToWriter = { type: "open"; path: string } | { type: "rows"; id: number; rows: string; bounds: Bounds } | { type: "prune"; id: number; bounds: Bounds } | { type: "close"; id: number };
export type FromWriter = { type: "done"; id: number; error?: string };

declare const self: Worker;

let db: Database | undefined;
let sinceBound = 0;

/** Rows per INSERT statement: one call binding many rows costs less than many calls binding one. */
const PER_STATEMENT = 50;
const COLUMNS = `at, task_id, task_ref, role, profile, credential, upstream, method, path, status, duration_ms, ttfb_ms, bytes_in, bytes_out,
  input_tokens, output_tokens, cache_read, cache_write, retries, note`;
const PLACEHOLDERS = `(${Array(20).fill("?").join(", ")})`;

function write(rows: Tuple[], bounds: Bounds): void {
  const d = db!;
  const many = d.query(`INSERT INTO audit (${COLUMNS}) VALUES ${Array(PER_STATEMENT).fill(PLACEHOLDERS).join(", ")}`);
  const one = d.query(`INSERT INTO audit (${COLUMNS}) VALUES ${PLACEHOLDERS}`);
  const count = d.query(
    `INSERT INTO task_tokens (task_id, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(task_id) DO UPDATE SET requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`,
  );
  // Token counters per task: summed over the batch, one upsert per task.
  const totals = new Map<string, [number, number, number, number, number]>();
  for (const r of rows) {
    const task = r[1];
    if (!task) continue;
    const t = totals.get(task) ?? [0, 0, 0, 0, 0];
    t[0]++;
    t[1] += r[14] ?? 0;
    t[2] += r[15] ?? 0;
    t[3] += r[16] ?? 0;
    t[4] += r[17] ?? 0;
    totals.set(task, t);
  }
  d.transaction(() => {
    let i = 0;
    for (; i + PER_STATEMENT <= rows.length; i += PER_STATEMENT) many.run(...(rows.slice(i, i + PER_STATEMENT).flat() as never[]));
    for (; i < rows.length; i++) one.run(...rows[i]!);
    for (const [task, t] of totals) count.run(task, ...t);
    sinceBound += rows.length;
    // Keep within the row bound without a COUNT per batch: trim once a tenth of it has arrived.
    if (sinceBound >= Math.max(10, bounds.maxRows / 10)) trim(bounds.maxRows);
  }).immediate();
}

/**
 * Keep the newest `maxRows` rows. Ids only grow and only the oldest rows are ever deleted, so
 * the newest `maxRows` are those within `maxRows` of the highest id: no scan to find the cut.
 */
function trim(maxRows: number): void {
  sinceBound = 0;
  db!.query("DELETE FROM audit WHERE id <= (SELECT max(id) FROM audit) - ?").run(maxRows);
}

/** Both bounds (once a minute): the age bound scans the table, which costs less than an index on every insert. */
function prune({ maxRows, maxAgeDays }: Bounds): void {
  const d = db!;
  const cutoff = Date.now() - maxAgeDays * 86_400_000;
  d.transaction(() => {
    d.query("DELETE FROM audit WHERE at < ?").run(cutoff);
    trim(maxRows);
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
    if (m.type === "rows") write(JSON.parse(m.rows) as Tuple[], m.bounds);
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
