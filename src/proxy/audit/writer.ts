/**
 * The audit trail's writer, on a worker thread: it owns a connection of its own to the store
 * and does the SQLite work (a batch's insert, token counters, WAL checkpoints, pruning), which
 * on the proxy's thread cost about a tenth of each request. The proxy's threads post batches of
 * rows here (store.ts); readers first wait until what they posted is written (trail.ts).
 */
import { Database } from "bun:sqlite";
import * as Store from "./store";
import { NUM, type Batch, type Bounds } from "./store";

export type ToWriter =
  | { type: "open"; path: string }
  | { type: "rows"; id: number; batch: Batch; bounds: Bounds }
  | { type: "prune"; id: number; bounds: Bounds }
  | { type: "close"; id: number };
export type FromWriter = { type: "done"; id: number; error?: string };

declare const self: Worker;

let db: Database | undefined;
/** The number the next row gets. */
let next = 1;
let sinceBound = 0;

const TOKENS = [NUM.input_tokens, NUM.output_tokens, NUM.cache_read, NUM.cache_write];

function write(batch: Batch, bounds: Bounds): void {
  const d = db!;
  const count = d.query(
    `INSERT INTO task_tokens (task_id, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(task_id) DO UPDATE SET requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`,
  );
  // Token counters per task: summed over the batch, one upsert per task.
  const totals = new Map<number, [number, number, number, number, number]>();
  for (let i = 0; i < batch.n; i++) {
    const task = Store.taskOf(batch, i);
    if (task === -1) continue;
    let t = totals.get(task);
    if (!t) {
      t = [0, 0, 0, 0, 0];
      totals.set(task, t);
    }
    t[0]++;
    for (let k = 0; k < TOKENS.length; k++) t[k + 1]! += Store.numberOf(batch, i, TOKENS[k]!) || 0;
  }
  // And per UTC day, task, profile and credential, for budgets (lazy stats budget).
  const days = new Map<string, [string, string, string, string, number, number, number, number, number]>();
  for (let i = 0; i < batch.n; i++) {
    const input = Store.numberOf(batch, i, NUM.input_tokens);
    const output = Store.numberOf(batch, i, NUM.output_tokens);
    if (Number.isNaN(input) && Number.isNaN(output)) continue;
    const day = new Date(Store.atOf(batch, i)).toISOString().slice(0, 10);
    const key = [
      day,
      Store.stringOf(batch, i, "task_id") ?? "",
      Store.stringOf(batch, i, "profile") ?? "",
      Store.stringOf(batch, i, "credential") ?? "",
    ] as const;
    const k = key.join("\u0000");
    let t = days.get(k);
    if (!t) {
      t = [...key, 0, 0, 0, 0, 0];
      days.set(k, t);
    }
    t[4]++;
    for (let j = 0; j < TOKENS.length; j++) (t[j + 5] as number) += Store.numberOf(batch, i, TOKENS[j]!) || 0;
  }
  const daily = d.query(
    `INSERT INTO usage_days (day, task_id, profile, credential, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(day, task_id, profile, credential) DO UPDATE SET requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`,
  );
  d.transaction(() => {
    Store.append(d, batch, next);
    next += batch.n;
    for (const [task, t] of totals) count.run(batch.table[task]!, ...t);
    for (const t of days.values()) daily.run(...t);
    sinceBound += batch.n;
    // Keep within the row bound without counting per batch: trim once a tenth of it has arrived.
    if (sinceBound >= Math.max(10, bounds.maxRows / 10)) trim(bounds.maxRows);
  }).immediate();
}

/**
 * Keep the newest `maxRows` rows: those numbered above the newest's number less `maxRows`.
 * Whole batches below it go; the one it cuts through keeps its newer rows.
 */
function trim(maxRows: number): void {
  sinceBound = 0;
  const floor = next - 1 - maxRows;
  const d = db!;
  d.query("DELETE FROM audit_batches WHERE id <= ? AND id + n - 1 <= ?").run(floor, floor);
  for (const cut of [...Store.newestFirst(d, "WHERE id <= ?", floor)]) Store.keepOnly(d, cut, (i) => cut.id + i > floor);
}

/** Both bounds (once a minute). */
function prune({ maxRows, maxAgeDays }: Bounds): void {
  const d = db!;
  const cutoff = Date.now() - maxAgeDays * 86_400_000;
  d.transaction(() => {
    d.query("DELETE FROM audit_batches WHERE last_at < ?").run(cutoff);
    for (const old of [...Store.newestFirst(d, "WHERE first_at < ?", cutoff)])
      Store.keepOnly(d, old, (i) => Store.atOf(old.batch, i) >= cutoff);
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
    next = Store.nextId(db);
    return;
  }
  let error: string | undefined;
  try {
    if (m.type === "rows") write(m.batch, m.bounds);
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
