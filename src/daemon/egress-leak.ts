/**
 * What the daemon does when its egress proxy sees a task's placeholder on its way out
 * (src/egress refuses the request itself): the task's turns are refused at the proxy at once
 * (the stopped map budgets use too), the running turn is stopped through the runner's stop
 * path, and the task's events say why. The proxy lets the task's turns through again once the
 * task no longer runs, so a person's next message starts a turn as usual.
 */
import type { Database } from "bun:sqlite";
import type { Bus } from "../bus";
import type { ModelProxy } from "../proxy";
import type { Runner } from "../runner";
import * as Store from "../store";
import type { Logger } from "../util/log";

export interface LeakDeps {
  db: Database;
  bus: Bus;
  proxy: Pick<ModelProxy, "stopTask" | "stoppedFor">;
  runner: () => Pick<Runner, "stop"> | undefined;
  log: Logger;
}

export function onLeak(d: LeakDeps): (taskId: string, why: string) => void {
  return (taskId, why) => {
    const task = Store.Tasks.byId(d.db, taskId);
    if (!task) return;
    const message = `lazy stopped this task: ${why}`;
    d.log.warn(`task ${task.code ?? task.id.slice(0, 8)}: ${message}`);
    d.proxy.stopTask(taskId, message);
    Store.Tasks.addEvent(d.db, taskId, "refused", { reason: message });
    d.bus.publish({ kind: "task", taskId });
    const release = () => {
      if (d.proxy.stoppedFor(taskId) === message) d.proxy.stopTask(taskId, null);
    };
    if (task.status !== "running") return release();
    const off = d.bus.subscribe((c) => {
      try {
        if (c.kind !== "task" || c.taskId !== taskId) return;
        if (Store.Tasks.byId(d.db, taskId)?.status === "running") return;
        off();
        release();
      } catch {} // a bus listener must not throw (AGENTS.md)
    });
    d.runner()
      ?.stop(taskId, "lazy (its placeholder was sent towards the network)")
      .catch((e: Error) => d.log.warn(`stopping task ${taskId} after a placeholder leak: ${e.message}`));
  };
}
