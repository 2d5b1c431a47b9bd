/**
 * Refusals of callers lazy cannot attribute, counted rather than kept as audit rows
 * (proxy/audit/refusals.ts): one SQLite row per minute, source address, reason, status and the
 * task a presented placeholder named (if any), with its count. Its own bound, so a flood of them
 * never evicts a real row of the audit trail.
 */
import type { Database } from "bun:sqlite";

/** One counted line as stored. `minute`: ms at the minute's start; `task_id` '' for none. */
export interface Line {
  minute: number;
  source: string;
  reason: string;
  status: number;
  taskId: string;
  taskRef: string;
  count: number;
  firstAt: number;
  lastAt: number;
  method: string;
  path: string;
}

/** Add counts: a line already stored for the same key grows. */
export function add(db: Database, lines: readonly Line[]): void {
  const q = db.query(
    `INSERT INTO audit_refusals (minute, source, reason, status, task_id, task_ref, count, first_at, last_at, method, path)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (minute, source, reason, status, task_id) DO UPDATE SET
       count = count + excluded.count,
       first_at = MIN(first_at, excluded.first_at),
       last_at = MAX(last_at, excluded.last_at)`,
  );
  for (const l of lines) q.run(l.minute, l.source, l.reason, l.status, l.taskId, l.taskRef, l.count, l.firstAt, l.lastAt, l.method, l.path);
}

/** Keep the newest `max` lines (by minute, then last refusal); drop those whose last refusal is older than `cutoff` (ms). */
export function trim(db: Database, max: number, cutoff: number): void {
  db.query("DELETE FROM audit_refusals WHERE last_at < ?").run(cutoff);
  const { n } = db.query("SELECT COUNT(*) AS n FROM audit_refusals").get() as { n: number };
  if (n > max)
    db.query("DELETE FROM audit_refusals WHERE rowid IN (SELECT rowid FROM audit_refusals ORDER BY minute, last_at LIMIT ?)").run(n - max);
}

/** The newest `limit` lines (of one task's placeholder; from minute `since` on), oldest first. */
export function newest(db: Database, o: { taskId?: string; since?: number; limit: number }): Line[] {
  const where = ["minute >= ?"];
  const params: (string | number)[] = [o.since === undefined ? 0 : o.since - (o.since % 60_000)];
  if (o.taskId !== undefined) {
    where.push("task_id = ?");
    params.push(o.taskId);
  }
  const rows = db
    .query(
      `SELECT minute, source, reason, status, task_id AS taskId, task_ref AS taskRef, count, first_at AS firstAt, last_at AS lastAt, method, path
       FROM audit_refusals WHERE ${where.join(" AND ")} ORDER BY minute DESC, last_at DESC LIMIT ?`,
    )
    .all(...params, o.limit) as Line[];
  return rows.reverse();
}

/** Lines stored. */
export function count(db: Database): number {
  return (db.query("SELECT COUNT(*) AS n FROM audit_refusals").get() as { n: number }).n;
}
