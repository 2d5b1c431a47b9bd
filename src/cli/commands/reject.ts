/**
 * `lazy reject T`: the task's branch is deleted and its session ends, which cannot be undone;
 * so it asks first (y/N on a terminal), takes --yes in scripts, and without a terminal and
 * without --yes refuses, saying so. `lazy close` ends a task and keeps its branch.
 */

import type { Task } from "../../store";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson } from "../command";
import { confirm } from "../confirm";
import { say } from "../voice";

export const reject = command({
  meta: { name: "reject", description: "Discard the task: its branch is deleted, its session ends (asks first; --yes in scripts)" },
  args: {
    task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true },
    yes: { type: "boolean", alias: "y", description: "Do not ask: delete the branch" },
    ...jsonArg,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    // The task first: a wrong code is said before any question.
    const { task } = await c.request<{ task: Task }>("GET", `/api/tasks/${encodeURIComponent(args.task)}`);
    const ref = task.code ?? task.id;
    if (!args.yes && !(await confirm(`Reject task ${ref} and delete its branch lazy/${ref}?`))) {
      say.info(`Nothing done: task ${ref} and its branch are as they were (lazy close ${ref} ends it and keeps the branch).`);
      return;
    }
    const t = await c.request<Task>("POST", `/api/tasks/${encodeURIComponent(task.id)}/reject`, undefined, 30 * 60_000);
    if (args.json) printJson(t);
    else print(`Task ${ref}: ${t.status} (its branch lazy/${ref} was deleted).`);
  },
});
