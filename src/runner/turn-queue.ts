/**
 * `[limits] max_running`: how many of the project's turns run at once (issue 35: a builder
 * session started 12 at once, and nothing capped them). A turn started past it is not refused:
 * it is queued (store: HeldTurns with window SLOT; the task shows `queued`, with an event that
 * says why and its place) and started by lazy when a running turn ends, first queued first.
 * Turns being set up (a launch, a best-of-N check) count as running. After a restart the queue
 * is read from the store and started as slots free.
 */
import type { Database } from "bun:sqlite";
import { type Config, maxRunning } from "../config";
import { canMove, HeldTurns, isFinal, Runs, type Task, Tasks } from "../store";
import type { Logger } from "../util/log";
import type { Ledger } from "./ledger";

export interface TurnQueueDeps {
  db: Database;
  log: Logger;
  config: () => Config;
  ledger: Ledger;
  /** Tasks whose turn (or check) is being set up (the runner's). */
  starting: Set<string>;
  /** Start a queued turn (the launcher's start, as the queue's own: a full project keeps it in its place). */
  start: (taskId: string, message: string | undefined) => Promise<Task>;
}

export class TurnQueue {
  private working = false;
  private again = false;

  constructor(private d: TurnQueueDeps) {}

  /** The bound and the turns that count against it now, not counting `taskId`'s own. */
  load(taskId: string): { max: number; running: number } {
    const running = new Set(Tasks.list(this.d.db, { status: "running" }).map((t) => t.id));
    for (const id of this.d.starting) running.add(id);
    running.delete(taskId);
    return { max: maxRunning(this.d.config().limits), running: running.size };
  }

  /** May the task's turn start now? Not when max_running turns run, or (`queued`: unless it is the queue's) others wait before it. */
  mayStart(taskId: string, fromQueue: boolean): boolean {
    const l = this.load(taskId);
    if (l.running >= l.max) return false;
    return fromQueue || !HeldTurns.queued(this.d.db).some((h) => h.task_id !== taskId);
  }

  /** Queue the task's turn: it is `queued`, with why and its place, until a running turn ends. */
  put(task: Task, message: string | undefined): Task {
    HeldTurns.queue(this.d.db, task.id, message ?? null);
    const place = HeldTurns.queued(this.d.db).findIndex((h) => h.task_id === task.id) + 1;
    const { max, running } = this.load(task.id);
    const why = { reason: "max_running", max, running, place };
    this.d.log.info(`task ${this.d.ledger.ref(task)}: turn queued, ${running} of [limits] max_running = ${max} running (place ${place})`);
    const t = canMove(task.status, "queued") ? this.d.ledger.move(task, "queued", why) : task;
    if (t === task) this.d.ledger.event(task, "queued", why);
    void this.next(); // a slot may have freed meanwhile
    return Tasks.byId(this.d.db, task.id) ?? t;
  }

  /**
   * `lazy stop` of a queued turn: it leaves the queue and does not start. A task that ran before
   * waits (lazy send goes on); one that never ran stays queued for its first `lazy start`.
   * Null: the task has no turn in the queue.
   */
  drop(task: Task, by: string): Task | null {
    if (task.status !== "queued" || HeldTurns.forTask(this.d.db, task.id)?.window !== HeldTurns.SLOT) return null;
    HeldTurns.removeTask(this.d.db, task.id);
    this.d.log.info(`task ${this.d.ledger.ref(task)}: its queued turn was stopped (${by})`);
    this.d.ledger.event(task, "stop", { by, queued: true });
    const t = Runs.get(this.d.db, task.id).turn > 0 ? this.d.ledger.move(task, "waiting", { reason: "stopped", by }) : task;
    void this.next(); // the ones behind it move up
    return Tasks.byId(this.d.db, task.id) ?? t;
  }

  /** Start queued turns, in order, while slots are free. Runs one at a time; a call meanwhile runs it again after. */
  async next(): Promise<void> {
    if (this.working) {
      this.again = true;
      return;
    }
    this.working = true;
    try {
      do {
        this.again = false;
        for (const h of HeldTurns.queued(this.d.db)) {
          const task = Tasks.byId(this.d.db, h.task_id);
          if (!task || isFinal(task.status)) {
            HeldTurns.remove(this.d.db, h.id);
            continue;
          }
          if (task.status === "running" || this.d.starting.has(task.id)) continue;
          if (!this.mayStart(task.id, true)) break;
          try {
            await this.d.start(task.id, h.message ?? undefined);
          } catch (e) {
            // Refused (its reason is on the task): it leaves the queue, the next one's turn comes.
            HeldTurns.removeTask(this.d.db, task.id);
            this.d.log.warn(`task ${this.d.ledger.ref(task)}: its queued turn did not start: ${(e as Error).message}`);
          }
          // Still queued: the slots filled meanwhile; it keeps its place.
          if (HeldTurns.forTask(this.d.db, task.id)?.window === HeldTurns.SLOT) break;
        }
      } while (this.again);
    } catch (e) {
      this.d.log.error(`the turn queue: ${(e as Error).message}`);
    } finally {
      this.working = false;
    }
  }
}
