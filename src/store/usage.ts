/**
 * The spending counters beside the audit trail, so they survive its eviction: tokens per task
 * (task_tokens) and per UTC day, task, profile, credential, model and price (usage_days). The
 * audit's writer adds to them a batch at a time, with the dollars its price gave then; budgets
 * and `lazy stats` sum those dollars, never price again. `model` is the model the upstream served
 * (else the one asked), "" when neither was known, and LEGACY for counters kept before models
 * were (given the profile's model of the day they were upgraded: stampLegacy). `price` is the
 * price used (prices/ priceText), "" when none was known, UNSTAMPED for counters kept before
 * dollars were (priced once at the next start: stampPrices).
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

/** Counters summed under one model and price, with the dollars kept for them. */
export type Priced = Sums & { model: string; price: string; usd: number };

/** One counter row of usage_days. */
export type Day = Priced & { day: string; task: string; profile: string; credential: string };

/** The model of counters kept before models were: no model name has a space (meters/usage.ts modelName). */
export const LEGACY = " legacy";
/** The price of counters kept before dollars were: no price text has a space. */
export const UNSTAMPED = " unstamped";

/** A batch's sums in the order the counters take them: requests, input, output, cache read, cache write. */
export type Counts = [requests: number, input: number, output: number, cacheRead: number, cacheWrite: number];

const COUNTS = "requests, input_tokens, output_tokens, cache_read, cache_write";
/** An upsert's SET: each counter adds what the row brings. */
const ADD = `requests = requests + excluded.requests, input_tokens = input_tokens + excluded.input_tokens,
       output_tokens = output_tokens + excluded.output_tokens, cache_read = cache_read + excluded.cache_read, cache_write = cache_write + excluded.cache_write`;
/** The same for a day's counter, its dollars too. */
const ADD_DAY = `${ADD}, usd = usd + excluded.usd`;

/** Add to a task's totals. */
export function addToTask(db: Database, taskId: string, counts: Counts): void {
  db.query(`INSERT INTO task_tokens (task_id, ${COUNTS}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(task_id) DO UPDATE SET ${ADD}`).run(
    taskId,
    ...counts,
  );
}

/**
 * Add to one day's counter: day, task id ("" for none), profile, credential, model ("" when
 * unknown), the price used ("" when none was known) and the dollars it gave (0 without one).
 */
export function addToDay(
  db: Database,
  day: string,
  taskId: string,
  profile: string,
  credential: string,
  model: string,
  price: string,
  usd: number,
  counts: Counts,
): void {
  db.query(
    `INSERT INTO usage_days (day, task_id, profile, credential, model, price, ${COUNTS}, usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT(day, task_id, profile, credential, model, price) DO UPDATE SET ${ADD_DAY}`,
  ).run(day, taskId, profile, credential, model, price, ...counts, usd);
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
      `INSERT INTO usage_days (day, task_id, profile, credential, model, price, ${COUNTS}, usd)
       SELECT day, task_id, profile, credential, ?, price, ${COUNTS}, usd FROM usage_days WHERE profile = ? AND model = ?
       ON CONFLICT(day, task_id, profile, credential, model, price) DO UPDATE SET ${ADD_DAY}`,
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

/** The models whose counters were kept before dollars were (UNSTAMPED). */
export function unstampedModels(db: Database): string[] {
  return (db.query("SELECT DISTINCT model FROM usage_days WHERE price = ?").all(UNSTAMPED) as { model: string }[]).map((r) => r.model);
}

/**
 * Price a model's UNSTAMPED counters, once: `price` is the price text ("" for none), `usd` the
 * dollars of a counter's tokens at it. From then on they are summed like any other.
 */
export function stampPrices(db: Database, model: string, price: string, usd: (s: Sums) => number): void {
  db.transaction(() => {
    const rows = db
      .query(`SELECT day, task_id AS task, profile, credential, ${COUNTS_AS} FROM usage_days WHERE model = ? AND price = ?`)
      .all(model, UNSTAMPED) as (Sums & { day: string; task: string; profile: string; credential: string })[];
    db.query("DELETE FROM usage_days WHERE model = ? AND price = ?").run(model, UNSTAMPED);
    for (const r of rows)
      addToDay(db, r.day, r.task, r.profile, r.credential, model, price, usd(r), [
        r.requests,
        r.input,
        r.output,
        r.cacheRead,
        r.cacheWrite,
      ]);
  }).immediate();
}

const COUNTS_AS = "requests, input_tokens AS input, output_tokens AS output, cache_read AS cacheRead, cache_write AS cacheWrite";
const SUMS =
  "SUM(requests) AS requests, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cache_read) AS cacheRead, SUM(cache_write) AS cacheWrite, SUM(usd) AS usd";

/** One task's counters summed per model and price. */
export function taskByModel(db: Database, taskId: string): Priced[] {
  return db.query(`SELECT model, price, ${SUMS} FROM usage_days WHERE task_id = ? GROUP BY model, price`).all(taskId) as Priced[];
}

/** One UTC day's counters (YYYY-MM-DD) summed per model and price. */
export function dayByModel(db: Database, day: string): Priced[] {
  return db.query(`SELECT model, price, ${SUMS} FROM usage_days WHERE day = ? GROUP BY model, price`).all(day) as Priced[];
}

/** Every counter row, for one scan summed several ways (usage/budget.ts report). */
export function days(db: Database): Day[] {
  return db.query(`SELECT day, task_id AS task, profile, credential, model, price, ${COUNTS_AS}, usd FROM usage_days`).all() as Day[];
}
