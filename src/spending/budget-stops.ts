/**
 * [budget] applied: after each batch of the audit is stored, the tasks it billed are
 * checked against their budgets (budget.ts). A task that reached one is stopped at its
 * next request by the proxy (the agent is told which budget), and once its turn ends it is
 * `waiting` with reason `budget` until a human raises it (lazy task budget) or closes it.
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import type { ModelProxy } from "../proxy";
import { canMove, isFinal, Runs, type Status, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { dayOver, type Over, overFor, type Spent, spentByTask, stampLegacy, taskLimit, taskOver } from "./budget";

export interface BudgetDeps {
  db: Database;
  config: () => Config;
  proxy: Pick<ModelProxy, "stopTask" | "stoppedFor"> & { audit: Pick<ModelProxy["audit"], "onWritten"> };
  log: Logger;
  move: (task: Task, to: Status, data: Record<string, unknown>) => Task;
  ref: (t: Task) => string;
}

export class Budgets {
  private off: (() => void) | undefined;

  constructor(private d: BudgetDeps) {}

  start(): void {
    stampLegacy(this.d.db, this.d.config());
    this.off = this.d.proxy.audit.onWritten((ids) => {
      const b = this.d.config().budget;
      const none = Object.values(b).every((v) => v === undefined);
      // No [budget]: nothing to check (and nothing stopped, unless a budget was just removed).
      if (none && !this.d.proxy.stoppedFor("*") && ![...ids].some((id) => this.d.proxy.stoppedFor(id))) return;
      const day = dayOver(this.d.db, this.d.config());
      for (const id of ids) this.check(id, day);
    });
  }

  stop(): void {
    this.off?.();
  }

  /** The budget this task has reached, if any (its own, or today's project budget). */
  over(task: Task): Over | null {
    return overFor(this.d.db, this.d.config(), { id: task.id, ref: this.d.ref(task) });
  }

  /** A task that reached its budget (or a project that reached today's) starts no turn: refused, naming it. */
  mayStart(task: Task): void {
    const over = this.over(task);
    if (over) throw new LazyError("conflict", `Task ${this.d.ref(task)} cannot start a turn: ${over.message}.`);
  }

  /** Why the proxy stops this task's turns now, if it does. */
  stoppedFor(task: Task): string | undefined {
    return this.d.proxy.stoppedFor(task.id);
  }

  /**
   * A turn ended: does the task wait on a budget (reached during the turn: the proxy stopped
   * it, or its last answer crossed the line)? The status event's data, or null.
   */
  waitFor(task: Task): Record<string, unknown> | null {
    const over = this.over(task);
    if (over) return why(over);
    const stopped = this.stoppedFor(task);
    return stopped ? { reason: "budget", detail: stopped } : null;
  }

  /** After tokens were billed to a task: stop it at the next request, or let it go again. */
  check(taskId: string, day: Over | null = dayOver(this.d.db, this.d.config())): void {
    const task = Tasks.byId(this.d.db, taskId);
    if (!task) return;
    const over = taskOver(this.d.db, this.d.config(), { id: task.id, ref: this.d.ref(task) }) ?? day;
    if (!over) {
      this.d.proxy.stopTask(task.id, null);
      this.d.proxy.stopTask("*", null);
      return;
    }
    this.d.proxy.stopTask(over.scope === "day" ? "*" : task.id, over.message);
    this.d.log.warn(`budget: ${over.message}`);
    // The turn already ended (its last answer crossed the line): the task waits all the same.
    if ((task.status === "done" || task.status === "failed") && canMove(task.status, "waiting")) this.d.move(task, "waiting", why(over));
  }

  /** A human raised the task's budget: add to it, and let its turns through if it is under. */
  raise(
    task: Task,
    add: { tokens?: number; usd?: number },
  ): { limit: { tokens: number | null; usd: number | null }; spent: Spent; over: Over | null } {
    if (isFinal(task.status)) throw new LazyError("conflict", `Task ${this.d.ref(task)} is ${task.status}; its session has ended.`);
    const run = Runs.get(this.d.db, task.id);
    Runs.save(this.d.db, task.id, { budget_tokens: run.budget_tokens + (add.tokens ?? 0), budget_usd: run.budget_usd + (add.usd ?? 0) });
    this.check(task.id);
    const s = spentByTask(this.d.db, this.d.config(), task.id);
    return { limit: taskLimit(this.d.db, this.d.config(), task.id), spent: s, over: this.over(task) };
  }
}

/** A status event's data for a task waiting on its budget. */
export const why = (o: Over) => ({ reason: "budget", scope: o.scope, unit: o.unit, spent: o.spent, limit: o.limit, detail: o.message });
