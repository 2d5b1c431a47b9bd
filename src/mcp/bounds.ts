/**
 * What one task's agent may put into lazy's store through the MCP tools, bounded (issue 26): the
 * agent is hostile, and 10,000 `report_progress` calls in 1.7 s were 10,000 event rows. Past a
 * bound the call is answered (and not stored), and lazy keeps a count of what it dropped: one
 * event per minute that had drops, never one per drop.
 *
 * - report_progress: at most PROGRESS_PER_MINUTE notes a task in any one minute (a fixed window
 *   from its first note), each at most the tool's own size (tools.ts). The drops of a window
 *   are written as one `progress_dropped` event when the window ends.
 * - memory_write: at most MEMORY_PER_TURN notes a turn; memory's own bound and compaction are
 *   own-calls/memory.ts's.
 *
 * Kept in memory: a daemon restart forgets a window (at worst a minute's drops go uncounted).
 */

/** Progress notes a task's agent may store in one minute: a human reads them, a few a minute is plenty. */
export const PROGRESS_PER_MINUTE = 30;
export const WINDOW_MS = 60_000;
/** Memory notes a task's agent may add in one turn (memory is for a few facts, not a log). */
export const MEMORY_PER_TURN = 5;

type Window = { start: number; kept: number; dropped: number; timer?: ReturnType<typeof setTimeout> };

export class ProgressBound {
  private windows = new Map<string, Window>();

  /** `flush`: a window with drops ended; record its count once. */
  constructor(
    private flush: (taskId: string, dropped: number) => void,
    private now = Date.now,
  ) {}

  /** May this task's next progress note be stored? Counted as dropped when not. */
  take(taskId: string): boolean {
    const t = this.now();
    let w = this.windows.get(taskId);
    if (w && t - w.start >= WINDOW_MS && !w.timer) w = undefined;
    if (!w) {
      w = { start: t, kept: 0, dropped: 0 };
      this.windows.set(taskId, w);
    }
    if (w.kept < PROGRESS_PER_MINUTE) {
      w.kept++;
      return true;
    }
    w.dropped++;
    if (!w.timer) {
      const win = w;
      win.timer = setTimeout(() => this.end(taskId, win), Math.max(0, win.start + WINDOW_MS - t));
      win.timer.unref?.();
    }
    return false;
  }

  /** Notes dropped so far in this task's current window. */
  dropped(taskId: string): number {
    return this.windows.get(taskId)?.dropped ?? 0;
  }

  private end(taskId: string, w: Window): void {
    if (this.windows.get(taskId) === w) this.windows.delete(taskId);
    try {
      this.flush(taskId, w.dropped);
    } catch {} // the task may be gone: its count goes with it
  }
}

/** Memory notes per task and turn (only the latest turn of each task is remembered). */
export class MemoryBound {
  private turns = new Map<string, { turn: number; n: number }>();

  /** May this task add another memory note in this turn? */
  take(taskId: string, turn: number): boolean {
    const have = this.turns.get(taskId);
    const c = have && have.turn === turn ? have : { turn, n: 0 };
    if (c.n >= MEMORY_PER_TURN) return false;
    c.n++;
    this.turns.set(taskId, c);
    return true;
  }
}
