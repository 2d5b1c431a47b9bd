/**
 * The audit trail's stored form: one SQLite row per batch of requests, as a proxy thread hands
 * them on, with the batch's columns packed. The writer's work is then one INSERT a batch
 * rather than one a request: a row each cost the writer thread ~3 µs a request, where the
 * proxy's own threads spend ~60 (bench/README.md).
 *
 *   audit_batches(id, n, first_at, last_at, numbers, strings, tbl)
 *
 * holds the requests numbered id .. id + n - 1, oldest first. `numbers` is n × NUMBERS
 * float64s (NaN for null); `strings` is n × STRINGS int32s, each an index into `tbl` (a JSON
 * array of the batch's distinct strings) or -1 for null. Both are in the machine's byte order,
 * little-endian on every platform lazy ships for. `first_at` and `last_at` bound the rows'
 * times, so the age bound drops whole batches without reading them.
 */
import type { Database } from "bun:sqlite";
import { AuditBatches } from "../../store";
import type { Counts } from "../meters";

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
  /** 0: the upstream the request was meant for; k: the k-th fallback it was rerouted to (proxy/request/fallback.ts). */
  hop: number;
  /** lazy's own time before the request left for this upstream (arrival, or the previous hop's failure, to departure). */
  lazyInMs: number | null;
  /** lazy's own time from this upstream's answer head to the answer's head leaving for the agent. */
  lazyOutMs: number | null;
  /**
   * The model the request asked for (its body's top-level `model`) and the one the upstream said
   * it served (the answer's `model`); spending is priced by the served one, else the asked one
   * (request/model.ts). Absent or null: not known (a row of an older batch, a refusal, no JSON).
   */
  modelAsked?: string | null;
  modelServed?: string | null;
}

export interface Bounds {
  maxRows: number;
  maxAgeDays: number;
}

/** A batch of rows in columns: per row, NUMBERS numbers and STRINGS indexes into `table`. */
export interface Batch {
  n: number;
  numbers: Float64Array;
  strings: Int32Array;
  table: string[];
}

export const NUMBERS = [
  "at",
  "status",
  "duration_ms",
  "ttfb_ms",
  "bytes_in",
  "bytes_out",
  "input_tokens",
  "output_tokens",
  "cache_read",
  "cache_write",
  "retries",
  "hop",
  "lazy_in_ms",
  "lazy_out_ms",
] as const;
/** The numbers a row had before hops and lazy's own time were kept: batches stored then are read as such. */
const OLD_N = 11;
export const STRINGS = [
  "task_id",
  "task_ref",
  "role",
  "profile",
  "credential",
  "upstream",
  "method",
  "path",
  "note",
  "model_asked",
  "model_served",
] as const;
/** The strings a row had before the models were kept: batches stored then are read as such. */
const OLD_S = 9;
const N = NUMBERS.length;
const S = STRINGS.length;
/** A column's place in a row's numbers or strings, by name. */
export const NUM = Object.fromEntries(NUMBERS.map((c, k) => [c, k])) as Record<(typeof NUMBERS)[number], number>;
const STR = Object.fromEntries(STRINGS.map((c, k) => [c, k])) as Record<(typeof STRINGS)[number], number>;
/** Rows a batch holds at most: the proxy's thread hands one on when it is full. */
export const BATCH_ROWS = 500;

export type Stored = { id: number; batch: Batch };

/** Milliseconds kept to the microsecond: finer is noise. */
const us = (ms: number) => Math.round(ms * 1000) / 1000;

/** Rows written into the columns of a batch of up to BATCH_ROWS, each string stored once. */
export class Builder {
  private n = 0;
  private numbers = new Float64Array(BATCH_ROWS * N);
  private strings = new Int32Array(BATCH_ROWS * S);
  private table: string[] = [];
  private index = new Map<string, number>();

  /** Add a row (written in NUMBERS and STRINGS order); true once the batch is full. */
  add(r: Row): boolean {
    const u = r.usage;
    const x = this.numbers;
    let o = this.n * N;
    x[o++] = r.at;
    x[o++] = r.status;
    x[o++] = us(r.durationMs);
    x[o++] = r.ttfbMs === null ? NaN : us(r.ttfbMs);
    x[o++] = r.bytesIn;
    x[o++] = r.bytesOut;
    x[o++] = u ? u.input : NaN;
    x[o++] = u ? u.output : NaN;
    x[o++] = u ? u.cacheRead : NaN;
    x[o++] = u ? u.cacheWrite : NaN;
    x[o++] = r.retries;
    x[o++] = r.hop;
    x[o++] = r.lazyInMs === null ? NaN : us(r.lazyInMs);
    x[o] = r.lazyOutMs === null ? NaN : us(r.lazyOutMs);
    const y = this.strings;
    o = this.n * S;
    y[o++] = this.intern(r.taskId);
    y[o++] = this.intern(r.taskRef);
    y[o++] = this.intern(r.role);
    y[o++] = this.intern(r.profile);
    y[o++] = this.intern(r.credential);
    y[o++] = this.intern(r.upstream);
    y[o++] = this.intern(r.method);
    y[o++] = this.intern(r.path);
    y[o++] = this.intern(r.note);
    y[o++] = this.intern(r.modelAsked ?? null);
    y[o] = this.intern(r.modelServed ?? null);
    return ++this.n === BATCH_ROWS;
  }

  /**
   * The batch so far (none if empty), in arrays of its own size (they are handed over to other
   * threads); the builder starts a new one in the same columns, which every row overwrites
   * whole. A batch holds a few dozen rows at a modest rate: a full one's columns (78 KB) for each
   * was most of what the audit allocated.
   */
  take(): Batch | undefined {
    if (!this.n) return undefined;
    const batch: Batch = {
      n: this.n,
      numbers: this.numbers.slice(0, this.n * N),
      strings: this.strings.slice(0, this.n * S),
      table: this.table,
    };
    this.n = 0;
    this.table = [];
    this.index.clear();
    return batch;
  }

  private intern(v: string | null): number {
    if (v === null) return -1;
    let k = this.index.get(v);
    if (k === undefined) {
      k = this.table.push(v) - 1;
      this.index.set(v, k);
    }
    return k;
  }
}

/** A row's string in column `column` (null when it has none). */
export function stringOf(b: Batch, i: number, column: (typeof STRINGS)[number]): string | null {
  const j = b.strings[i * S + STR[column]]!;
  return j === -1 ? null : b.table[j]!;
}

/** Store `batch` as rows `id` on. */
export function append(db: Database, batch: Batch, id: number): void {
  let first = Infinity;
  let last = -Infinity;
  for (let i = 0; i < batch.n; i++) {
    const at = atOf(batch, i);
    if (at < first) first = at;
    if (at > last) last = at;
  }
  AuditBatches.insert(db, {
    id,
    n: batch.n,
    firstAt: first,
    lastAt: last,
    numbers: bytes(batch.numbers, batch.n * N),
    strings: bytes(batch.strings, batch.n * S),
    tbl: JSON.stringify(batch.table),
  });
}

/** The number the next row gets. */
export const nextId = (db: Database): number => AuditBatches.nextId(db);

export const count = (db: Database): number => AuditBatches.count(db);

/** The stored batches, newest first, read one at a time (a reader may stop early). */
export function* newestFirst(db: Database, which?: AuditBatches.Which): Generator<Stored> {
  for (const r of AuditBatches.newestFirst(db, which)) yield { id: r.id, batch: decode(r) };
}

/** The index into the batch's strings of row `i`'s task id (-1: none). */
export const taskOf = (b: Batch, i: number): number => b.strings[i * S + STR.task_id]!;

/** Row `i`'s time (ms). */
export const atOf = (b: Batch, i: number): number => b.numbers[i * N + NUM.at]!;

/** A number of row `i` by its column (NaN stands for null). */
export const numberOf = (b: Batch, i: number, column: number): number => b.numbers[i * N + column]!;

/** A batch's buffers, handed to another thread rather than copied (each batch's are its own: Builder.take). */
export const buffers = (b: Batch): ArrayBuffer[] => [b.numbers.buffer as ArrayBuffer, b.strings.buffer as ArrayBuffer];

/** Row `i` of a batch. */
export function rowOf(b: Batch, i: number): Row {
  const str = (k: number) => {
    const j = b.strings[i * S + k]!;
    return j === -1 ? null : b.table[j]!;
  };
  const num = (k: number) => {
    const v = numberOf(b, i, k);
    return Number.isNaN(v) ? null : v;
  };
  const input = num(NUM.input_tokens);
  const output = num(NUM.output_tokens);
  return {
    at: numberOf(b, i, NUM.at),
    status: numberOf(b, i, NUM.status),
    durationMs: numberOf(b, i, NUM.duration_ms),
    ttfbMs: num(NUM.ttfb_ms),
    bytesIn: numberOf(b, i, NUM.bytes_in),
    bytesOut: numberOf(b, i, NUM.bytes_out),
    usage:
      input === null && output === null
        ? null
        : { input: input ?? 0, output: output ?? 0, cacheRead: num(NUM.cache_read) ?? 0, cacheWrite: num(NUM.cache_write) ?? 0 },
    retries: numberOf(b, i, NUM.retries),
    taskId: str(STR.task_id),
    taskRef: str(STR.task_ref),
    role: str(STR.role),
    profile: str(STR.profile),
    credential: str(STR.credential),
    upstream: str(STR.upstream)!,
    method: str(STR.method)!,
    path: str(STR.path)!,
    note: str(STR.note),
    hop: numberOf(b, i, NUM.hop) || 0,
    lazyInMs: num(NUM.lazy_in_ms),
    lazyOutMs: num(NUM.lazy_out_ms),
    modelAsked: str(STR.model_asked),
    modelServed: str(STR.model_served),
  };
}

/**
 * Keep only the rows of a stored batch that `keep` accepts, renumbered to end where the batch
 * ended (numbers only ever order rows); a batch left empty goes.
 */
export function keepOnly(db: Database, { id, batch }: Stored, keep: (i: number) => boolean): void {
  const kept: number[] = [];
  for (let i = 0; i < batch.n; i++) if (keep(i)) kept.push(i);
  AuditBatches.remove(db, id);
  if (!kept.length) return;
  const numbers = new Float64Array(kept.length * N);
  const strings = new Int32Array(kept.length * S);
  kept.forEach((i, k) => {
    numbers.set(batch.numbers.subarray(i * N, (i + 1) * N), k * N);
    strings.set(batch.strings.subarray(i * S, (i + 1) * S), k * S);
  });
  append(db, { n: kept.length, numbers, strings, table: batch.table }, id + batch.n - kept.length);
}

function bytes(a: Float64Array | Int32Array, length: number): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, length * a.BYTES_PER_ELEMENT);
}

function decode(r: AuditBatches.Raw): Batch {
  // A copy: SQLite's bytes need not sit at an 8-byte boundary.
  let numbers = new Float64Array(r.numbers.slice().buffer);
  const n = r.n;
  // A batch stored before the newer columns: widened, the new ones unknown (NaN; hop 0).
  if (n && numbers.length === n * OLD_N) {
    const wide = new Float64Array(n * N).fill(NaN);
    for (let i = 0; i < n; i++) {
      wide.set(numbers.subarray(i * OLD_N, (i + 1) * OLD_N), i * N);
      wide[i * N + NUM.hop] = 0;
    }
    numbers = wide;
  }
  let strings = new Int32Array(r.strings.slice().buffer);
  // A batch stored before the models were kept: widened, the models unknown (-1).
  if (n && strings.length === n * OLD_S) {
    const wide = new Int32Array(n * S).fill(-1);
    for (let i = 0; i < n; i++) wide.set(strings.subarray(i * OLD_S, (i + 1) * OLD_S), i * S);
    strings = wide;
  }
  return { n, numbers, strings, table: JSON.parse(r.tbl) as string[] };
}

/**
 * Before the batches, the trail was one SQLite row per request in a table `audit`: pack what a
 * store still holds there into batches, in order, and drop it. The stored form's own upgrade,
 * so the store's migrations need not know it (they only create the table).
 */
export function packLegacy(db: Database): void {
  if (!AuditBatches.hasLegacy(db)) return;
  db.transaction(() => {
    const batch = new Builder();
    let next = nextId(db);
    const flush = () => {
      const b = batch.take();
      if (!b) return;
      append(db, b, next);
      next += b.n;
    };
    for (const r of AuditBatches.legacyRows(db)) {
      const full = batch.add({
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
        usage:
          r.input_tokens === null && r.output_tokens === null
            ? null
            : {
                input: (r.input_tokens as number) ?? 0,
                output: (r.output_tokens as number) ?? 0,
                cacheRead: (r.cache_read as number) ?? 0,
                cacheWrite: (r.cache_write as number) ?? 0,
              },
        retries: r.retries as number,
        note: r.note as string | null,
        hop: 0,
        lazyInMs: null,
        lazyOutMs: null,
      });
      if (full) flush();
    }
    flush();
    AuditBatches.dropLegacy(db);
  }).immediate();
}
