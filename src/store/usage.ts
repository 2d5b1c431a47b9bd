/**
 * The spending counters beside the audit trail, so they survive its eviction: tokens per task
 * (task_tokens) and per UTC day, task, profile and credential (usage_days). The audit's writer
 * adds to them a batch at a time; budgets and `lazy stats` read them.
 */
import type { Database } from "bun:sqlite";

/** Requests and tokens added up, under the names budgets use. */
export interface Sums {
  requests: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

/** One counter row of usage_days. */
export type Day = Sums & { day: string; task: string; profile: string; credential: string };

/** A batch's sums in the order the counters take them: requests, input, output, cache read, cache write. */
export type Counts = [requests: number, input: number, output: number, cacheRead: number, cacheWrite: number];

const COUNTS = "requests, input_tokens, output_tokens, cache_read, cache_write";
/** An upsert's SET: each counter adds what the row brings. */
const ADD = `requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`;

/** Add to a task's totals. */
export function addToTask(db: Database, taskId: string, counts: Counts): void {
  db.query(`INSERT INTO task_tokens (task_id, ${COUNTS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(task_id) DO UPDATE SET ${ADD}`).run(
    taskId,
    ...counts,
  );
}

/** Add to one day's counter: day, task id ("" for none), profile, credential. */
export function addToDay(db: Database, day: string, taskId: string, profile: string, credential: string, counts: Counts): void {
  db.query(
    `INSERT INTO usage_days (day, task_id, profile, credential, ${COUNTS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(day, task_id, profile, credential) DO UPDATE SET ${ADD}`,
  ).run(day, taskId, profile, credential, ...counts);
}

/** A task's totals (all 0 when it made no request). */
export function ofTask(db: Database, taskId: string): Sums {
  const r = db.query("SELECT * FROM task_tokens WHERE task_id = ?").get(taskId) as Record<string, number> | null;
  return {
    requests: r?.requests ?? 0,
    input: r?.input_tokens ?? 0,
    output: r?.output_tokens ?? 0,
    cacheRead: r?.cache_read ?? 0,
    cacheWrite: r?.cache_write ?? 0,
  };
}

const SUMS =
  "SUM(requests) AS requests, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cache_read) AS cacheRead, SUM(cache_write) AS cacheWrite";

/** One task's counters summed per profile. */
export function taskByProfile(db: Database, taskId: string): (Sums & { profile: string })[] {
  return db.query(`SELECT profile, ${SUMS} FROM usage_days WHERE task_id = ? GROUP BY profile`).all(taskId) as (Sums & {
    profile: string;
  })[];
}

/** One UTC day's counters (YYYY-MM-DD) summed per profile. */
export function dayByProfile(db: Database, day: string): (Sums & { profile: string })[] {
  return db.query(`SELECT profile, ${SUMS} FROM usage_days WHERE day = ? GROUP BY profile`).all(day) as (Sums & { profile: string })[];
}

/** Every counter row, for one scan summed several ways (usage/budget.ts report). */
export function days(db: Database): Day[] {
  return db
    .query(
      "SELECT day, task_id AS task, profile, credential, requests, input_tokens AS input, output_tokens AS output, cache_read AS cacheRead, cache_write AS cacheWrite FROM usage_days",
    )
    .all() as Day[];
}
