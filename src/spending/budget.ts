/**
 * Budgets ([budget]) and what was spent: tokens and dollars per task, profile, credential, model
 * and UTC day from the usage_days counters (the audit's row bound never erases them). Each
 * request is priced by the model it was served (else the one it asked for), never by what a
 * profile's config says, and once, when the audit's writer adds it to the counters: those keep
 * the dollars and the price used, and everything here sums them. An agent asking for a dearer
 * model than its profile's is charged for that model; a later price table, [prices] entry or
 * profile model re-prices nothing. A model lazy had no price for is named ("no price known for
 * MODEL"), never counted as $0. A task that reaches its budget is stopped at its next request and
 * waits with reason `budget`; never a silent cap, never a silent overrun.
 */
import type { Database } from "bun:sqlite";
import { type Config, resolveProfile } from "../config";
import { costOf, DEAREST, ownPrices, priceOf, priceText, type Tokens, tokensOf } from "../prices";
import { Runs, Tasks, Usage } from "../store";

export interface Spent extends Tokens {
  requests: number;
  tokens: number;
  /** Dollars, where every model involved has a known price; null otherwise (`unpriced` names them). */
  usd: number | null;
  /** Dollars of the models that have a price (at least this was spent). */
  knownUsd: number;
  /**
   * What a dollar budget is held to: `knownUsd`, plus the tokens of models with no price at the
   * dearest rates lazy knows (prices DEAREST). An agent asking for a real model lazy cannot price
   * must not spend past a dollar budget.
   */
  budgetUsd: number;
  /** The models with tokens and no known price ("" for tokens whose model no answer named), sorted. */
  unpriced: string[];
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

export const today = (now = Date.now()) => new Date(now).toISOString().slice(0, 10);

/** A counter that adds up rows of any grouping, with the dollars each was priced at when written. */
class Counter implements Spent {
  requests = 0;
  input = 0;
  output = 0;
  cacheRead = 0;
  cacheWrite = 0;
  knownUsd = 0;
  /** The unpriced tokens at the dearest rates (a dollar budget's bound). */
  private boundUnpriced = 0;
  private missing: Set<string> | undefined;

  add(r: Usage.Priced): void {
    this.requests += r.requests;
    this.input += r.input;
    this.output += r.output;
    this.cacheRead += r.cacheRead;
    this.cacheWrite += r.cacheWrite;
    if (r.price !== "" && r.price !== Usage.UNSTAMPED) this.knownUsd += r.usd;
    else if (tokensOf(r) > 0) {
      this.missing ??= new Set();
      this.missing.add(r.model);
      this.boundUnpriced += costOf(DEAREST, r) ?? 0;
    }
  }

  get tokens(): number {
    return tokensOf(this);
  }

  get usd(): number | null {
    return this.missing ? null : this.knownUsd;
  }

  get budgetUsd(): number {
    return this.knownUsd + this.boundUnpriced;
  }

  get unpriced(): string[] {
    return this.missing ? [...this.missing].sort() : [];
  }

  /** As plain data (for JSON). */
  spent(): Spent {
    const { requests, input, output, cacheRead, cacheWrite, tokens, usd, knownUsd, budgetUsd, unpriced } = this;
    return { requests, input, output, cacheRead, cacheWrite, tokens, usd, knownUsd, budgetUsd, unpriced };
  }
}

/** Add up rows into tokens and the dollars they were priced at. */
export function total(rows: readonly Usage.Priced[]): Spent {
  const c = new Counter();
  for (const r of rows) c.add(r);
  return c.spent();
}

/** A profile's model as configured now (undefined: none, or a profile since removed). */
function modelOf(config: Config, profile: string): string | undefined {
  try {
    return resolveProfile(config, profile).model;
  } catch {
    return undefined;
  }
}

/**
 * Counters kept before models were (Usage.LEGACY) are given the model their profile names now,
 * once, at the daemon's first start on this version: from then on no config edit moves them.
 */
export function stampLegacy(db: Database, config: Config): void {
  for (const profile of Usage.legacyProfiles(db)) Usage.stampLegacy(db, profile, modelOf(config, profile) ?? "");
  stampPrices(db, config);
}

/**
 * Counters kept before dollars were (Usage.UNSTAMPED) are priced once, by their model at the
 * prices of this start ([prices], then the table): from then on they are summed like the rest.
 */
export function stampPrices(db: Database, config: Config): void {
  for (const model of Usage.unstampedModels(db)) {
    const price = priceOf(model, ownPrices(config.prices));
    Usage.stampPrices(db, model, price ? priceText(price) : "", (s) => costOf(price, s) ?? 0);
  }
}

export function spentByTask(db: Database, _config: Config, taskId: string): Spent {
  return total(Usage.taskByModel(db, taskId));
}

/** A task's spending per model served (else asked; "" for none named), the most tokens first. */
export function modelsOfTask(db: Database, taskId: string): (Spent & { model: string })[] {
  const by = new Map<string, Counter>();
  for (const r of Usage.taskByModel(db, taskId)) {
    let c = by.get(r.model);
    if (!c) {
      c = new Counter();
      by.set(r.model, c);
    }
    c.add(r);
  }
  return [...by].map(([model, c]) => ({ model, ...c.spent() })).sort((a, b) => b.tokens - a.tokens);
}

export function spentOnDay(db: Database, _config: Config, day = today()): Spent {
  return total(Usage.dayByModel(db, day));
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
    // Dollars: what the priced models cost, and a model with no price at the dearest rates known
    // (it must not escape a dollar budget; the cost shown still says "no price known").
    const n = unit === "tokens" ? s.tokens : s.budgetUsd;
    if (l === null || n < l) continue;
    const unpriced = unit === "usd" ? s.unpriced.map((m) => m || "a model no answer named") : [];
    const note = unpriced.length
      ? `; it counts ${unpriced.join(", ")} (no price known) at the dearest rates lazy knows: [prices."MODEL"] in lazy.toml prices later requests`
      : "";
    return { scope, unit, spent: n, limit: l, message: say(unit, n, l) + note };
  }
  return null;
}

export interface BudgetReport {
  budget: Config["budget"];
  today: Spent & { day: string };
  days: (Spent & { day: string })[];
  tasks: (Spent & { taskId: string; code: string | null; limit: { tokens: number | null; usd: number | null } })[];
  profiles: (Spent & { profile: string })[];
  /** Per model served (else asked): `priced` whether every token of it had a price when written. */
  models: (Spent & { model: string; priced: boolean })[];
  credentials: (Spent & { credential: string })[];
}

/** Everything lazy stats budget shows but the readings: one GROUP BY per view over the counters. */
export function report(db: Database, config: Config, opts: { days?: number; tasks?: number } = {}): BudgetReport {
  const since = today(Date.now() - ((opts.days ?? 30) - 1) * 86_400_000);
  // One scan of the counters, summed five ways here: four GROUP BYs cost twice as much
  // (bench/README.md "lazy stats budget").
  const rows = Usage.days(db);
  const byDay = new Map<string, Counter>();
  const byTask = new Map<string, Counter>();
  const byProfile = new Map<string, Counter>();
  const byModel = new Map<string, Counter>();
  const byCredential = new Map<string, Counter>();
  const add = (m: Map<string, Counter>, k: string, r: Usage.Day) => {
    let c = m.get(k);
    if (!c) {
      c = new Counter();
      m.set(k, c);
    }
    c.add(r);
  };
  for (const r of rows) {
    if (r.day >= since) add(byDay, r.day, r);
    if (r.task) add(byTask, r.task, r);
    add(byProfile, r.profile, r);
    add(byModel, r.model, r);
    add(byCredential, r.credential, r);
  }
  const days = [...byDay].map(([day, c]) => ({ day, ...c.spent() })).sort((a, b) => b.day.localeCompare(a.day));
  // The most spending first; only the ones shown are looked up (10,000 point queries cost ~100 ms).
  const tasks = [...byTask]
    .map(([k, c]) => ({ k, s: c.spent() }))
    .sort((a, b) => b.s.tokens - a.s.tokens)
    .slice(0, opts.tasks ?? 50)
    .map(({ k, s }) => ({
      taskId: k,
      code: Tasks.codeOf(db, k),
      limit: taskLimit(db, config, k),
      ...s,
    }));
  const profiles = [...byProfile].map(([profile, c]) => ({ profile, ...c.spent() }));
  const models = [...byModel]
    .map(([model, c]) => ({ model, priced: c.unpriced.length === 0, ...c.spent() }))
    .sort((a, b) => b.tokens - a.tokens);
  const credentials = [...byCredential].map(([k, c]) => ({ credential: k || "(none)", ...c.spent() }));
  const t = today();
  return {
    budget: config.budget,
    today: days.find((d) => d.day === t) ?? { day: t, ...total([]) },
    days,
    tasks,
    profiles,
    models,
    credentials,
  };
}
