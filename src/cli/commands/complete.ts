/**
 * `lazy __complete tasks CMD…`: the task codes a completion script offers at `lazy start <TAB>`
 * (completion/), one `code<TAB>status` a line. Hidden: the scripts call it, people do not.
 *
 * A TAB must be quick and must not change anything: it asks a daemon that already runs (never
 * starts one) with a short deadline, and prints nothing on any failure. What it prints is only
 * what a code may be (store/tasks.ts CODE_RE) or 8 hex digits of an id, so a shell that expands
 * its candidates (bash's compgen -W) finds nothing in them to run, whatever the store holds.
 */

import { type Action, actions, isStatus, type Task, Tasks } from "../../store";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, print } from "../command";

/** Commands whose positional is a task and that act on it: only tasks that allow the action are offered. */
const ACTION: Record<string, Action> = {
  start: "start",
  send: "send",
  stop: "stop",
  accept: "accept",
  reject: "reject",
  close: "close",
  "task budget": "budget",
};

const HEX8 = /^[0-9a-f]{8}$/;

/** The word a person types for a task, if it is safe to hand a shell; else null (left out). */
export function completionWord(t: Pick<Task, "id" | "code">): string | null {
  if (t.code !== null) return Tasks.CODE_RE.test(t.code) ? t.code : null;
  const short = t.id.slice(0, 8);
  return HEX8.test(short) ? short : null;
}

/** The lines for the tasks `command` (its words: "start", "task budget") may name. */
export function taskLines(tasks: Pick<Task, "id" | "code" | "status">[], commandWords: string[]): string[] {
  const action = ACTION[commandWords.join(" ")];
  const out: string[] = [];
  for (const t of tasks) {
    if (!isStatus(t.status)) continue;
    if (action && !actions(t.status).includes(action)) continue;
    const word = completionWord(t);
    if (word) out.push(`${word}\t${t.status}`);
  }
  return out;
}

export const complete = command({
  meta: { name: "__complete", description: "What the shell completion scripts offer (lazy completion)", hidden: true },
  args: {
    what: { type: "positional", description: "tasks", required: true },
    command: { type: "positional", description: "The command being completed (start, task budget)", required: false },
  },
  async run({ args, rawArgs }) {
    if (args.what !== "tasks") return;
    const words = rawArgs.filter((w) => !w.startsWith("-")).slice(1);
    let tasks: Task[];
    try {
      const c = await Client.running(findProjectRoot());
      if (!c) return;
      tasks = await c.request<Task[]>("GET", "/api/tasks", undefined, 1500);
    } catch {
      return; // no project, no daemon, a slow one: nothing to offer
    }
    if (!Array.isArray(tasks)) return;
    const lines = taskLines(tasks, words);
    // One write: a line a write is 200 system calls for 200 tasks, on every TAB.
    if (lines.length) print(lines.join("\n"));
  },
});
