/**
 * The audit trail's writer, on a worker thread: it owns a connection of its own to the store
 * and does the SQLite work (a batch's insert, token counters, WAL checkpoints, pruning), which
 * on the proxy's thread cost about a tenth of each request. The proxy's threads post batches of
 * rows here (store.ts); readers first wait until what they posted is written (trail.ts).
 */
import type { Database } from "bun:sqlite";
import { dirname } from "node:path";
import * as Disk from "../../disk";
import { costOf, type Own, priceOf, priceText } from "../../prices";
import { AuditBatches, AuditRefusals, connect, Usage } from "../../store";
import type * as Refusals from "./refusals";
import * as Store from "./store";

export type ToWriter =
  | { type: "open"; path: string }
  | { type: "rows"; id: number; batch: Store.Batch; bounds: Store.Bounds & { prices?: Own } }
  | { type: "prune"; id: number; bounds: Store.Bounds & Refusals.Bounds }
  | { type: "refused"; id: number; tally: Refusals.Tally; bounds: Refusals.Bounds & Pick<Store.Bounds, "maxAgeDays"> }
  | { type: "close"; id: number };
export type FromWriter = { type: "done"; id: number; error?: string };

declare const self: Worker;

let db: Database | undefined;
/** The state folder: where lazy's disk reserve is, freed when a batch finds no room. */
let stateDir: string | undefined;
/** The number the next row gets. */
let next = 1;
let sinceBound = 0;

const TOKENS = [Store.NUM.input_tokens, Store.NUM.output_tokens, Store.NUM.cache_read, Store.NUM.cache_write];

/** A day's counter as a batch adds to it: its key, the price used ("" for none) and what it adds. */
type DayAdd = { key: readonly [string, string, string, string, string]; price: string; usd: number; counts: Usage.Counts };

function write(batch: Store.Batch, bounds: Store.Bounds & { prices?: Own }): void {
  const d = db!;
  // Token counters per task: summed over the batch, one upsert per task.
  const totals = new Map<number, Usage.Counts>();
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
  // And per UTC day, task, profile, credential and model (the one served, else the one asked;
  // "" when neither is known), for budgets (lazy stats budget): priced by that model now, once
  // ([prices], then lazy's table), whatever the profile's config or the prices say later.
  const days = new Map<string, DayAdd>();
  const prices = new Map<string, ReturnType<typeof priceOf>>();
  for (let i = 0; i < batch.n; i++) {
    const input = Store.numberOf(batch, i, Store.NUM.input_tokens);
    const output = Store.numberOf(batch, i, Store.NUM.output_tokens);
    if (Number.isNaN(input) && Number.isNaN(output)) continue;
    const day = new Date(Store.atOf(batch, i)).toISOString().slice(0, 10);
    const key = [
      day,
      Store.stringOf(batch, i, "task_id") ?? "",
      Store.stringOf(batch, i, "profile") ?? "",
      Store.stringOf(batch, i, "credential") ?? "",
      Store.stringOf(batch, i, "model_served") ?? Store.stringOf(batch, i, "model_asked") ?? "",
    ] as const;
    const k = key.join("\u0000");
    let t = days.get(k);
    if (!t) {
      if (!prices.has(key[4])) prices.set(key[4], priceOf(key[4], bounds.prices));
      const price = prices.get(key[4]) ?? null;
      t = { key, price: price ? priceText(price) : "", usd: 0, counts: [0, 0, 0, 0, 0] };
      days.set(k, t);
    }
    t.counts[0]++;
    for (let j = 0; j < TOKENS.length; j++) t.counts[j + 1]! += Store.numberOf(batch, i, TOKENS[j]!) || 0;
  }
  for (const t of days.values()) {
    const [, input, output, cacheRead, cacheWrite] = t.counts;
    t.usd = costOf(prices.get(t.key[4]) ?? null, { input, output, cacheRead, cacheWrite }) ?? 0;
  }
  // A failed transaction is rolled back: so are the counters it moved (the batch may be written again).
  const before = { next, sinceBound };
  try {
    writeAll(d, batch, bounds, totals, days);
  } catch (err) {
    ({ next, sinceBound } = before);
    throw err;
  }
}

function writeAll(
  d: Database,
  batch: Store.Batch,
  bounds: Store.Bounds,
  totals: Map<number, Usage.Counts>,
  days: Map<string, DayAdd>,
): void {
  d.transaction(() => {
    Store.append(d, batch, next);
    next += batch.n;
    for (const [task, t] of totals) Usage.addToTask(d, batch.table[task]!, t);
    for (const t of days.values()) Usage.addToDay(d, ...t.key, t.price, t.usd, t.counts);
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
  AuditBatches.removeUpTo(d, floor);
  for (const cut of [...Store.newestFirst(d, { idAtMost: floor })]) Store.keepOnly(d, cut, (i) => cut.id + i > floor);
}

/** Both bounds (once a minute), and the counted refusals' own. */
function prune({ maxRows, maxAgeDays, maxRefusals }: Store.Bounds & Refusals.Bounds): void {
  const d = db!;
  const cutoff = Date.now() - maxAgeDays * 86_400_000;
  d.transaction(() => {
    AuditBatches.removeOlderThan(d, cutoff);
    for (const old of [...Store.newestFirst(d, { firstBefore: cutoff })]) Store.keepOnly(d, old, (i) => Store.atOf(old.batch, i) >= cutoff);
    trim(maxRows);
    AuditRefusals.trim(d, maxRefusals, cutoff);
  }).immediate();
}

/** Refusals counted on the proxy's threads (refusals.ts): added to their lines, kept within their own bound, never the rows'. */
let refusalsSince = 0;
function count(tally: Refusals.Tally, { maxRefusals, maxAgeDays }: Refusals.Bounds & Pick<Store.Bounds, "maxAgeDays">): void {
  const d = db!;
  d.transaction(() => {
    AuditRefusals.add(d, tally);
    refusalsSince += tally.length;
    // Trimmed once a tenth of the bound's lines came in (most add to a line already stored).
    if (refusalsSince >= Math.max(10, maxRefusals / 10)) {
      refusalsSince = 0;
      AuditRefusals.trim(d, maxRefusals, Date.now() - maxAgeDays * 86_400_000);
    }
  }).immediate();
}

function run(m: Exclude<ToWriter, { type: "open" }>): void {
  if (m.type === "rows") write(m.batch, m.bounds);
  else if (m.type === "refused") count(m.tally, m.bounds);
  else if (m.type === "prune") prune(m.bounds);
  else {
    db?.close();
    db = undefined;
  }
}

self.onmessage = (e: MessageEvent<ToWriter>) => {
  const m = e.data;
  if (m.type === "open") {
    // The proxy's thread writes tasks and events on its own connection: wait for it, not fail.
    db = connect(m.path, { strict: true, synchronous: "NORMAL" });
    stateDir = dirname(m.path);
    next = Store.nextId(db);
    return;
  }
  let error: string | undefined;
  try {
    try {
      run(m);
    } catch (err) {
      // The disk is full: lazy's reserve is freed (once) and the batch written into that room.
      if (m.type === "close" || !Disk.isFull(err) || !stateDir || !Disk.release(stateDir)) throw err;
      console.error(`lazy: the disk holding lazy's state is full (${(err as Error).message}): freed lazy's reserve for the audit`);
      run(m);
    }
  } catch (err) {
    error = `${m.type === "rows" ? "a batch of audit rows was lost: " : m.type === "refused" ? "counts of refused callers were lost: " : ""}${(err as Error).message}`;
  }
  postMessage({ type: "done", id: m.id, ...(error ? { error } : {}) } satisfies FromWriter);
};
