/**
 * Budgets ([budget]) and what was spent: tokens per task, profile, credential and UTC day from
 * the usage_days counters (the audit's row bound never erases them), priced where the profile
 * names a model lazy knows (prices.ts). A task that reaches its budget is stopped at its next
 * request and waits with reason `budget`; never a silent cap, never a silent overrun.
 */
import type { Database } from "bun:sqlite";
import { type Config, resolveProfile } from "../config";
import { Runs, Tasks, Usage } from "../store";
import { costOf, priceOf, type Tokens, tokensOf } from "./prices";

export interface Spent extends Tokens {
  requests: number;
  tokens: number;
  /** Dollars, where every profile involved has a known price; null otherwise. */
  usd: number | null;
}

export interface Over {
  /** Which limit: the task's own, or the project's for today. */
  scope: "task" | "day";
  unit: "tokens" | "usd";
  spent: number;
  limit: number;
  /** One sentence for the agent's error, the task's event and the CLI. */
  message: string;
}

type Sums = Usage.Sums & { profile: string };

export const today = (now = Date.now()) => new Date(now).toISOString().slice(0, 10);

/** Add up rows grouped by profile into tokens and, where every profile is priced, dollars. */
export function total(config: Config, rows: readonly Sums[]): Spent {
  const out: Spent = { requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, tokens: 0, usd: 0 };
  for (const r of rows) {
    out.requests += r.requests;
    out.input += r.input;
    out.output += r.output;
    out.cacheRead += r.cacheRead;
    out.cacheWrite += r.cacheWrite;
    const cost = costOf(priceOf(modelOf(config, r.profile)), r);
    out.usd = out.usd === null || cost === null ? null : out.usd + cost;
  }
  out.tokens = tokensOf(out);
  if (!rows.length) out.usd = 0;
  return out;
}

function modelOf(config: Config, profile: string): string | undefined {
  try {
    return resolveProfile(config, profile).model;
  } catch {
    return undefined; // a profile since removed from lazy.toml: no price
  }
}

export function spentByTask(db: Database, config: Config, taskId: string): Spent {
  return total(config, Usage.taskByProfile(db, taskId));
}

export function spentOnDay(db: Database, config: Config, day = today()): Spent {
  return total(config, Usage.dayByProfile(db, day));
}

/** A task's budget: [budget] per_task_* plus what a human added (lazy task budget). */
export function taskLimit(db: Database, config: Config, taskId: string): { tokens: number | null; usd: number | null } {
  const added = Runs.budgetAdded(db, taskId);
  const b = config.budget;
  return {
    tokens: b.per_task_tokens === undefined ? null : b.per_task_tokens + added.tokens,
    usd: b.per_task_usd === undefined ? null : b.per_task_usd + added.usd,
  };
}

/** Has this task (or today's project total) reached a budget? The first one reached, or null. */
export function overFor(db: Database, config: Config, task: { id: string; ref: string }): Over | null {
  return taskOver(db, config, task) ?? dayOver(db, config);
}

export function taskOver(db: Database, config: Config, task: { id: string; ref: string }): Over | null {
  return reached(
    "task",
    taskLimit(db, config, task.id),
    () => spentByTask(db, config, task.id),
    (unit, spent, limit) =>
      unit === "tokens"
        ? `task ${task.ref} reached its token budget (${spent} of ${limit} tokens); a human can raise it: lazy task budget ${task.ref} +N`
        : `task ${task.ref} reached its budget ($${spent.toFixed(2)} of $${limit.toFixed(2)}); a human can raise it: lazy task budget ${task.ref} +N --usd`,
  );
}

/** Has the project reached today's budget? */
export function dayOver(db: Database, config: Config): Over | null {
  const b = config.budget;
  return reached(
    "day",
    { tokens: b.per_day_tokens ?? null, usd: b.per_day_usd ?? null },
    () => spentOnDay(db, config),
    (unit, spent, limit) =>
      unit === "tokens"
        ? `the project reached today's token budget (${spent} of ${limit} tokens, [budget] per_day_tokens); it renews at 00:00 UTC`
        : `the project reached today's budget ($${spent.toFixed(2)} of $${limit.toFixed(2)}, [budget] per_day_usd); it renews at 00:00 UTC`,
  );
}

/**
 * The first of a scope's limits (tokens, then dollars) that what it spent reached, worded by
 * `say`; what was spent is only summed when a limit is set.
 */
function reached(
  scope: Over["scope"],
  limit: { tokens: number | null; usd: number | null },
  spent: () => Spent,
  say: (unit: Over["unit"], spent: number, limit: number) => string,
): Over | null {
  if (limit.tokens === null && limit.usd === null) return null;
  const s = spent();
  for (const unit of ["tokens", "usd"] as const) {
    const l = limit[unit];
    const n = s[unit];
    if (l !== null && n !== null && n >= l) return { scope, unit, spent: n, limit: l, message: say(unit, n, l) };
  }
  return null;
}

export interface BudgetReport {
  budget: Config["budget"];
  today: Spent & { day: string };
  days: (Spent & { day: string })[];
  tasks: (Spent & { taskId: string; code: string | null; limit: { tokens: number | null; usd: number | null } })[];
  profiles: (Spent & { profile: string; model: string | null; priced: boolean })[];
  credentials: (Spent & { credential: string })[];
}

/** Everything lazy stats budget shows but the readings: one GROUP BY per view over the counters. */
export function report(db: Database, config: Config, opts: { days?: number; tasks?: number } = {}): BudgetReport {
  const since = today(Date.now() - ((opts.days ?? 30) - 1) * 86_400_000);
  // One scan of the counters, summed four ways here: four GROUP BYs cost twice as much
  // (bench/README.md "lazy stats budget"). A profile's price is looked up once.
  const prices = new Map<string, ReturnType<typeof priceOf>>();
  const priceFor = (profile: string) => {
    if (!prices.has(profile)) prices.set(profile, priceOf(modelOf(config, profile)));
    return prices.get(profile) ?? null;
  };
  type Counter = Tokens & { requests: number; usd: number | null };
  const rows = Usage.days(db);
  const byDay = new Map<string, Counter>();
  const byTask = new Map<string, Counter>();
  const byProfile = new Map<string, Counter>();
  const byCredential = new Map<string, Counter>();
  const add = (m: Map<string, Counter>, k: string, r: Sums) => {
    let c = m.get(k);
    if (!c) {
      c = { requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, usd: 0 };
      m.set(k, c);
    }
    c.requests += r.requests;
    c.input += r.input;
    c.output += r.output;
    c.cacheRead += r.cacheRead;
    c.cacheWrite += r.cacheWrite;
    const cost = costOf(priceFor(r.profile), r);
    c.usd = c.usd === null || cost === null ? null : c.usd + cost;
  };
  for (const r of rows) {
    if (r.day >= since) add(byDay, r.day, r);
    if (r.task) add(byTask, r.task, r);
    add(byProfile, r.profile, r);
    add(byCredential, r.credential, r);
  }
  const spent = (c: Counter): Spent => ({ ...c, tokens: tokensOf(c) });
  const days = [...byDay].map(([day, c]) => ({ day, ...spent(c) })).sort((a, b) => b.day.localeCompare(a.day));
  // The most spending first; only the ones shown are looked up (10,000 point queries cost ~100 ms).
  const tasks = [...byTask]
    .map(([k, c]) => ({ k, s: spent(c) }))
    .sort((a, b) => b.s.tokens - a.s.tokens)
    .slice(0, opts.tasks ?? 50)
    .map(({ k, s }) => ({
      taskId: k,
      code: Tasks.codeOf(db, k),
      limit: taskLimit(db, config, k),
      ...s,
    }));
  const profiles = [...byProfile].map(([profile, c]) => {
    const model = modelOf(config, profile) ?? null;
    return { profile, model, priced: priceFor(profile) !== null, ...spent(c) };
  });
  const credentials = [...byCredential].map(([k, c]) => ({ credential: k || "(none)", ...spent(c) }));
  const t = today();
  return {
    budget: config.budget,
    today: days.find((d) => d.day === t) ?? { day: t, ...total(config, []) },
    days,
    tasks,
    profiles,
    credentials,
  };
}
