import { command, print, printJson, table } from "../command";
import * as Client from "../client";
import { findProjectRoot } from "../../util/paths";
import type { Task, TaskEvent } from "../../store";
import { say } from "../voice";

const json = { json: { type: "boolean", description: "Print JSON on stdout" } } as const;

const add = command({
  meta: { name: "task add", description: "Add a task" },
  args: {
    prompt: { type: "positional", description: "What the agent should do", required: true },
    code: { type: "string", description: "A unique handle for the task, e.g. fix-login" },
    profile: { type: "string", description: "Agent profile (default: [models.roles] agent, else claude)" },
    title: { type: "string", description: "A title (default: the prompt's first line)" },
    ...json,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const t = await c.request<Task>("POST", "/api/tasks", { prompt: args.prompt, code: args.code, profile: args.profile, title: args.title });
    if (args.json) printJson(t);
    else say.success(`Added task ${t.id}${t.code ? ` (${t.code})` : ""}: ${t.title} [${t.profile}]`);
  },
});

const list = command({
  meta: { name: "task list", description: "List tasks" },
  args: { status: { type: "string", description: "Only tasks with this status" }, ...json },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const tasks = await c.request<Task[]>("GET", `/api/tasks${args.status ? `?status=${encodeURIComponent(args.status)}` : ""}`);
    if (args.json) return printJson(tasks);
    if (!tasks.length) return print("No tasks yet: lazy task add \"what to do\".");
    print(table([["ID", "CODE", "STATUS", "PROFILE", "TITLE"], ...tasks.map((t) => [t.id, t.code ?? "-", t.status, t.profile, t.title])]));
  },
});

const show = command({
  meta: { name: "task show", description: "Show a task and its events" },
  args: { task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true }, ...json },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${encodeURIComponent(args.task)}`);
    if (args.json) return printJson(r);
    const t = r.task;
    print(`${t.id}${t.code ? ` (${t.code})` : ""}  ${t.status}  [${t.profile}]`);
    print(`Title:   ${t.title}`);
    print(`Created: ${t.createdAt}   Updated: ${t.updatedAt}`);
    print(`Prompt:\n${t.prompt.replace(/^/gm, "  ")}`);
    print("Events:");
    for (const e of r.events) print(`  ${e.at}  ${e.kind}  ${JSON.stringify(e.data)}`);
  },
});

export const task = command({
  meta: { name: "task", description: "Add, list and show tasks" },
  subCommands: { add, list, show },
});
