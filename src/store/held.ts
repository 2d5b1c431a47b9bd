/**
 * Turns held: by [usage_pause] (the credential and when its window resets), or queued by
 * `[limits] max_running` (window SLOT, no credential or reset: the turn starts when a running
 * one ends, in the order of `at`). The task, the message its turn carries (null: the task's own
 * prompt). One row per task: a second message sent while held joins the first, so the agent
 * gets both in the turn that runs.
 */
import type { Database } from "bun:sqlite";

export interface Held {
  id: number;
  task_id: string;
  message: string | null;
  at: number;
  credential: string | null;
  window: string | null;
  resets_at: number | null;
}

export function put(
  db: Database,
  taskId: string,
  message: string | null,
  pause: { credential: string; window: string; resetsAt: number },
  now = Date.now(),
): void {
  const had = db.query("SELECT * FROM held_turns WHERE task_id = ?").get(taskId) as Held | null;
  if (had) {
    db.query("UPDATE held_turns SET message = ?, credential = ?, window = ?, resets_at = ? WHERE id = ?").run(
      joined(had.message, message),
      pause.credential,
      pause.window,
      pause.resetsAt,
      had.id,
    );
  } else
    db.query("INSERT INTO held_turns (task_id, message, at, credential, window, resets_at) VALUES (?, ?, ?, ?, ?, ?)").run(
      taskId,
      message,
      now,
      pause.credential,
      pause.window,
      pause.resetsAt,
    );
}

/** The `window` of a turn queued for a free slot under [limits] max_running. */
export const SLOT = "max_running";

const joined = (a: string | null, b: string | null) => (a && b ? `${a}\n\n${b}` : (b ?? a));

/** Every turn held by [usage_pause], oldest first. */
export function all(db: Database): Held[] {
  return db.query("SELECT * FROM held_turns WHERE window IS NOT ? ORDER BY at, id").all(SLOT) as Held[];
}

/** Queue the task's turn for a free slot (a turn queued already keeps its place; a message joins its own). */
export function queue(db: Database, taskId: string, message: string | null, now = Date.now()): void {
  const had = forTask(db, taskId);
  if (had && had.window === SLOT) db.query("UPDATE held_turns SET message = ? WHERE id = ?").run(joined(had.message, message), had.id);
  else {
    if (had) remove(db, had.id);
    db.query("INSERT INTO held_turns (task_id, message, at, window) VALUES (?, ?, ?, ?)").run(
      taskId,
      joined(had?.message ?? null, message),
      now,
      SLOT,
    );
  }
}

/** Turns queued for a free slot, first queued first. */
export function queued(db: Database): Held[] {
  return db.query("SELECT * FROM held_turns WHERE window = ? ORDER BY at, id").all(SLOT) as Held[];
}

export function forTask(db: Database, taskId: string): Held | null {
  return db.query("SELECT * FROM held_turns WHERE task_id = ?").get(taskId) as Held | null;
}

export function remove(db: Database, id: number): void {
  db.query("DELETE FROM held_turns WHERE id = ?").run(id);
}

export function removeTask(db: Database, taskId: string): void {
  db.query("DELETE FROM held_turns WHERE task_id = ?").run(taskId);
}

/** Epoch ms of the soonest reset among held turns, or null. */
export function nextReset(db: Database): number | null {
  return (db.query("SELECT MIN(resets_at) AS t FROM held_turns").get() as { t: number | null }).t;
}
