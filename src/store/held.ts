/**
 * Turns held by [usage_pause]: the task, the message its turn carries (null: the task's own
 * prompt), and when the credential's window resets. One row per task: a second message sent
 * while held joins the first, so the agent gets both in the turn that runs.
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
    const joined = had.message && message ? `${had.message}\n\n${message}` : (message ?? had.message);
    db.query("UPDATE held_turns SET message = ?, credential = ?, window = ?, resets_at = ? WHERE id = ?").run(
      joined,
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

/** Every held turn, oldest first. */
export function all(db: Database): Held[] {
  return db.query("SELECT * FROM held_turns ORDER BY at, id").all() as Held[];
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
