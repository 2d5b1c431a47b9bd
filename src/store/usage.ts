/**
 * The spending counters beside the audit trail, so they survive its eviction: tokens per task
 * (task_tokens) and per UTC day, task, profile, credential and model (usage_days). The audit's
 * writer adds to them a batch at a time; budgets and `lazy stats` read them. `model` is the model
 * the upstream served (else the one asked), "" when neither was known, and LEGACY for counters
 * kept before models were (priced once by the profile's model of the day they were upgraded:
 * stampLegacy).
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
export type Day = Sums & { day: string; task: string; profile: string; credential: string; model: string };

/** The model of counters kept before models were: no model name has a space (meters/usage.ts modelName). */
export const LEGACY = " legacy";

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

/** Add to one day's counter: day, task id ("" for none), profile, credential, model ("" when unknown). */
export function addToDay(
  db: Database,
  day: string,
  taskId: string,
  profile: string,
  credential: string,
  model: string,
  counts: Counts,
): void {
  db.query(
    `INSERT INTO usage_days (day, task_id, profile, credential, model, ${COUNTS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(day, task_id, profile, credential, model) DO UPDATE SET ${ADD}`,
  ).run(day, taskId, profile, credential, model, ...counts);
}

/** The profiles that still have LEGACY counters. */
export function legacyProfiles(db: Database): string[] {
  return (db.query("SELECT DISTINCT profile FROM usage_days WHERE model = ?").all(LEGACY) as { profile: string }[]).map((r) => r.profile);
}

/**
 * Give a profile's LEGACY counters a model (the profile's, as configured when this runs; "" for
 * none), once: they are priced by it from then on, whatever the config says later.
 */
export function stampLegacy(db: Database, profile: string, model: string): void {
  db.transaction(() => {
    db.query(
      `INSERT INTO usage_days (day, task_id, profile, credential, model, ${COUNTS})
       SELECT day, task_id, profile, credential, ?, ${COUNTS} FROM usage_days WHERE profile = ? AND model = ?
       ON CONFLICT(day, task_id, profile, credential, model) DO UPDATE SET ${ADD}`,
    ).run(model, profile, LEGACY);
    db.query("DELETE FROM usage_days WHERE profile = ? AND model = ?").run(profile, LEGACY);
  }).immediate();
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

/** One task's counters summed per model. */
export function taskByModel(db: Database, taskId: string): (Sums & { model: string })[] {
  return db.query(`SELECT model, ${SUMS} FROM usage_days WHERE task_id = ? GROUP BY model`).all(taskId) as (Sums & {
    model: string;
  })[];
}

/** One UTC day's counters (YYYY-MM-DD) summed per model. */
export function dayByModel(db: Database, day: string): (Sums & { model: string })[] {
  return db.query(`SELECT model, ${SUMS} FROM usage_days WHERE day = ? GROUP BY model`).all(day) as (Sums & { model: string })[];
}

/** Every counter row, for one scan summed several ways (usage/budget.ts report). */
export function days(db: Database): Day[] {
  return db
    .query(
      "SELECT day, task_id AS task, profile, credential, model, requests, input_tokens AS input, output_tokens AS output, cache_read AS cacheRead, cache_write AS cacheWrite FROM usage_days",
    )
    .all() as Day[];
}
