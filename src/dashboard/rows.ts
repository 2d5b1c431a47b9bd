/**
 * What the dashboard's pages show of a task beyond its record: why it is where it is (the first
 * thing one reads), its tokens and cost, its last message. Computed on the daemon from the same
 * store and counters the CLI reads, so the page never shows a state the CLI would not.
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import { type Spent, spentByTask } from "../spending";
import { type Action, actions, HeldTurns, Runs, type Task, type TaskEvent, Tasks } from "../store";

export interface TaskRow extends Task {
  /** What the task is doing or waiting for, in a sentence. */
  why: string;
  tokens: number;
  /** Dollars, priced by the models served (null when one has no price: `unpriced` names it). */
  usd: number | null;
  knownUsd: number;
  unpriced: string[];
  /** The agent's newest message (its first 240 characters), if any. */
  lastMessage: string | null;
  /** What a person can do to it now (its status's moves): the page offers only these. */
  actions: Action[];
  /** Its place in the queue of turns past [limits] max_running (1 starts next); null when not queued there. */
  queuePlace: number | null;
}

/** Why a task is in its status, from its newest status event (the runner records the reason there). */
export function why(t: Task, last: TaskEvent | undefined, place?: number): string {
  const d = (last?.data ?? {}) as Record<string, unknown>;
  switch (t.status) {
    case "queued":
      if (place) return `Queued: [limits] max_running turns run now; it starts by itself when one ends (place ${place} in the queue).`;
      return "Not started yet: Start runs its first turn.";
    case "running":
      return `Its agent is working (since ${last?.at ?? t.updatedAt}).`;
    case "waiting":
      if (d.reason === "usage_pause") return `Held by [usage_pause] (${d.credential}: ${d.detail}); it starts by itself at ${d.resetsAt}.`;
      if (d.reason === "budget") return `Stopped by its budget: ${d.detail}. Raise the budget to go on.`;
      if (d.stopped) return "Stopped by a person: waiting for you to send a message, accept, reject or close it.";
      return "Waiting for you: send a message, accept, reject or close it.";
    case "done":
      return "Its turn is done: review the diff, then accept, reject, or send a message.";
    case "failed":
      return `Failed${d.error ? `: ${String(d.error)}` : d.reason ? `: ${String(d.reason)}` : ""}. Start retries it; close ends it.`;
    case "accepted":
      return `Accepted: merged into the project${typeof d.commits === "number" ? ` (${d.commits} commit(s))` : ""}.`;
    case "rejected":
      return "Rejected: its branch was deleted.";
    case "closed":
      return "Closed without merging.";
  }
}

const spentOf = (db: Database, config: Config, id: string): Spent => spentByTask(db, config, id);

/** The rows of a page of tasks: a few indexed reads per task, so a page of 50 costs the same at 10,000 tasks. */
export function rows(db: Database, config: Config, tasks: readonly Task[]): TaskRow[] {
  const ids = tasks.map((t) => t.id);
  const status = Tasks.latest(db, ids, "status");
  const message = Tasks.latest(db, ids, "message");
  // Turns queued by [limits] max_running, and their places (a handful: read once a page).
  const places = new Map(HeldTurns.queued(db).map((h, i) => [h.task_id, i + 1]));
  return tasks.map((t) => {
    const s = spentOf(db, config, t.id);
    const m = message.get(t.id)?.data.text;
    return {
      ...t,
      why: why(t, status.get(t.id), places.get(t.id)),
      queuePlace: places.get(t.id) ?? null,
      tokens: s.tokens,
      usd: s.usd,
      knownUsd: s.knownUsd,
      unpriced: s.unpriced,
      lastMessage: typeof m === "string" ? m.slice(0, 240) : null,
      actions: actions(t.status),
    };
  });
}

/** The question a waiting task's agent asked the person (MCP ask_human) and when, until a message answers it. */
export function question(db: Database, t: Task): { text: string; at: string } | null {
  if (t.status !== "waiting") return null;
  const text = Runs.get(db, t.id).question;
  return text ? { text, at: Tasks.lastEvent(db, t.id, "question")?.at ?? t.updatedAt } : null;
}
