/**
 * A task's run: its container, harness session, turn counter, how far the daemon has read the
 * current turn's events (so a restarted daemon picks up where it left off), and lazy's own
 * records of what the agent's container could otherwise lie about (the worktree's admin folder,
 * which turn a human stopped). The runner's only table; its SQL lives here.
 */
import type { Database } from "bun:sqlite";

export interface Run {
  task_id: string;
  container_id: string | null;
  session: string | null;
  turn: number;
  offset: number;
  setup_done: number;
  profile: string | null;
  admin: string | null;
  stopped_turn: number | null;
  /** Tokens and dollars a human added to the task's budget (lazy task budget). */
  budget_tokens: number;
  budget_usd: number;
  /** A question the agent asked the human (MCP ask_human), until a message answers it. */
  question: string | null;
  /** The agent's own summary of its work (MCP finish). */
  summary: string | null;
}

export type RunPatch = Partial<Omit<Run, "task_id">>;

const COLUMNS = new Set([
  "container_id",
  "session",
  "turn",
  "offset",
  "setup_done",
  "profile",
  "admin",
  "stopped_turn",
  "budget_tokens",
  "budget_usd",
  "question",
  "summary",
]);

/** The task's run, if it has one: a read that never writes (`get` makes the row). */
export function find(db: Database, taskId: string): Run | undefined {
  return (db.query("SELECT * FROM runs WHERE task_id = ?").get(taskId) as Run | null) ?? undefined;
}

/** The task's run, made on first use. */
export function get(db: Database, taskId: string): Run {
  const r = db.query("SELECT * FROM runs WHERE task_id = ?").get(taskId) as Run | null;
  if (r) return r;
  db.query("INSERT INTO runs (task_id) VALUES (?)").run(taskId);
  return db.query("SELECT * FROM runs WHERE task_id = ?").get(taskId) as Run;
}

/** What a human added to the task's budget (lazy task budget): read without making a run. */
export function budgetAdded(db: Database, taskId: string): { tokens: number; usd: number } {
  const r = db.query("SELECT budget_tokens, budget_usd FROM runs WHERE task_id = ?").get(taskId) as {
    budget_tokens: number;
    budget_usd: number;
  } | null;
  return { tokens: r?.budget_tokens ?? 0, usd: r?.budget_usd ?? 0 };
}

export function save(db: Database, taskId: string, patch: RunPatch): void {
  const keys = Object.keys(patch).filter((k) => COLUMNS.has(k));
  if (!keys.length) return;
  const values = keys.map((k) => (patch as Record<string, string | number | null>)[k] ?? null);
  db.query("INSERT OR IGNORE INTO runs (task_id) VALUES (?)").run(taskId); // a task that never ran has no row yet
  db.query(`UPDATE runs SET ${keys.map((k) => `${k} = ?`).join(", ")} WHERE task_id = ?`).run(...values, taskId);
}
