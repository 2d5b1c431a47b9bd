/**
 * A task's record as every step of its lifecycle writes it: a status move or an event goes
 * into the store and out on the bus in one call, so no step records without publishing (the
 * dashboard and `lazy watch` follow the bus). Its name as people see it (`ref`) too. The
 * runner's parts (launch, reconcile, turn-watch, endings, groups, remote) share one ledger.
 */
import type { Database } from "bun:sqlite";
import type { Bus } from "../bus";
import { type Status, type Task, Tasks } from "../store";

export interface LedgerDeps {
  db: Database;
  bus: Bus;
  /** A task that stops running: its grants stop redeeming (proxy/index.ts release). */
  release: (taskId: string) => void;
  /** A turn ended (the task left `running`): a queued turn may take its slot (turn-queue.ts). */
  ended?: () => void;
}

export class Ledger {
  constructor(private d: LedgerDeps) {}

  /** The task's name as people see it: its code, else its id. */
  ref = (t: Task): string => t.code ?? t.id;

  /** Record an event on the task, and say on the bus that it changed. */
  event = (task: Task, kind: string, data: Record<string, unknown>): void => {
    Tasks.addEvent(this.d.db, task.id, kind, data);
    this.d.bus.publish({ kind: "task", taskId: task.id });
  };

  /** Move the task's status (the store checks the move), and publish it. */
  move = (task: Task, to: Status, data: Record<string, unknown> = {}): Task => {
    const t = Tasks.move(this.d.db, task.id, to, data);
    // A task that stops running: its grants stop redeeming (a turn's end releases earlier, too).
    if (to !== "running") this.d.release(task.id);
    this.d.bus.publish({ kind: "task", taskId: task.id });
    this.d.bus.publish({ kind: "status", taskId: task.id, from: task.status, to, data });
    if (task.status === "running" && to !== "running") this.d.ended?.();
    return t;
  };

  /** Say on the bus that a task was added or changed outside a move or an event. */
  changed = (task: Task): void => {
    this.d.bus.publish({ kind: "task", taskId: task.id });
  };
}
