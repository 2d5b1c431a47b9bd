/**
 * The audit trail's batches as SQLite rows: audit_batches(id, n, first_at, last_at, numbers,
 * strings, tbl) holds the requests numbered id .. id + n - 1. Here the columns are opaque bytes;
 * how a batch packs its rows is proxy/audit/store.ts's. Also the trail's older form (a table
 * `audit`, one row per request), read once to be packed into batches and dropped.
 */
import type { Database } from "bun:sqlite";

/** A batch as stored. */
export interface Raw {
  id: number;
  n: number;
  numbers: Uint8Array;
  strings: Uint8Array;
  tbl: string;
}

export function insert(db: Database, r: Raw & { firstAt: number; lastAt: number }): void {
  db.query("INSERT INTO audit_batches (id, n, first_at, last_at, numbers, strings, tbl) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
    r.id,
    r.n,
    r.firstAt,
    r.lastAt,
    r.numbers,
    r.strings,
    r.tbl,
  );
}

/** The number the next row gets. */
export function nextId(db: Database): number {
  const r = db.query("SELECT id + n AS next FROM audit_batches ORDER BY id DESC LIMIT 1").get() as { next: number } | null;
  return r?.next ?? 1;
}

/** Rows stored. */
export function count(db: Database): number {
  return (db.query("SELECT COALESCE(SUM(n), 0) AS n FROM audit_batches").get() as { n: number }).n;
}

/** Which batches to read: all, those from row number `idAtMost` down, or those with a row older than `firstBefore`. */
export type Which = { idAtMost: number } | { firstBefore: number } | undefined;

/** The stored batches, newest first, read one at a time (a reader may stop early). */
export function* newestFirst(db: Database, which?: Which): Generator<Raw> {
  const [where, params] =
    which === undefined
      ? ["", []]
      : "idAtMost" in which
        ? ["WHERE id <= ?", [which.idAtMost]]
        : ["WHERE first_at < ?", [which.firstBefore]];
  // A statement of its own, finalized however the reader stops: one left mid-read would hold
  // its snapshot of the store, and the WAL could not be checkpointed past it.
  const q = db.prepare(`SELECT id, n, numbers, strings, tbl FROM audit_batches ${where} ORDER BY id DESC`);
  try {
    for (const r of q.iterate(...params) as Iterable<Raw>) yield r;
  } finally {
    q.finalize();
  }
}

export function remove(db: Database, id: number): void {
  db.query("DELETE FROM audit_batches WHERE id = ?").run(id);
}

/** Drop the batches whose rows are all numbered `floor` or below. */
export function removeUpTo(db: Database, floor: number): void {
  db.query("DELETE FROM audit_batches WHERE id <= ? AND id + n - 1 <= ?").run(floor, floor);
}

/** Drop the batches whose rows are all older than `cutoff` (ms). */
export function removeOlderThan(db: Database, cutoff: number): void {
  db.query("DELETE FROM audit_batches WHERE last_at < ?").run(cutoff);
}

/** Does the store still hold the trail's older form? */
export function hasLegacy(db: Database): boolean {
  return !!db.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit'").get();
}

/** The older form's rows, oldest first, as stored (snake_case columns). */
export function legacyRows(db: Database): Iterable<Record<string, number | string | null>> {
  return db.query("SELECT * FROM audit ORDER BY id").iterate() as Iterable<Record<string, number | string | null>>;
}

export function dropLegacy(db: Database): void {
  db.exec("DROP TABLE audit");
}
