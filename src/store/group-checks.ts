/** The [review] check's verdict on a best-of-N group's untouched base (compare/groups.ts): one row a group. */
import type { Database } from "bun:sqlite";

export interface BaseVerdict {
  /** The commit judged: where the candidates forked from. */
  base: string;
  command: string;
  ok: boolean;
  code: number;
  ms: number;
  output: string;
  error: string | null;
  at: string;
}

interface Row {
  base: string;
  command: string;
  ok: number;
  code: number;
  ms: number;
  output: string;
  error: string | null;
  at: number;
}

export function get(db: Database, group: string): BaseVerdict | null {
  const r = db.query<Row, [string]>("SELECT base, command, ok, code, ms, output, error, at FROM group_checks WHERE grp = ?").get(group);
  return r ? { ...r, ok: r.ok === 1, at: new Date(r.at).toISOString() } : null;
}

export function put(db: Database, group: string, v: Omit<BaseVerdict, "at">): void {
  db.query(
    `INSERT INTO group_checks (grp, base, command, ok, code, ms, output, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(grp) DO UPDATE SET base = excluded.base, command = excluded.command, ok = excluded.ok, code = excluded.code,
       ms = excluded.ms, output = excluded.output, error = excluded.error, at = excluded.at`,
  ).run(group, v.base, v.command, v.ok ? 1 : 0, v.code, v.ms, v.output, v.error, Date.now());
}
