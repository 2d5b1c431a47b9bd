import { costText } from "../../lines";
import type { Spent } from "../../spending";
import type { Task, TaskEvent } from "../../store";
import { LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson, table } from "../command";
import { promptArgs } from "../prompt-input";
import { say } from "../voice";
import { addGroup, groupAndPrompt, groupArgs } from "./compare";
import { fetchDiff, statLines } from "./diff";

const add = command({
  meta: { name: "task add", description: "Add a task" },
  args: {
    ...promptArgs("prompt", "What the agent should do"),
    code: { type: "string", description: "A unique handle for the task, e.g. fix-login" },
    profile: { type: "string", description: "Agent profile (default: [models.roles] agent, else claude)" },
    ...groupArgs,
    title: { type: "string", description: "A title (default: the prompt's first line)" },
    ...jsonArg,
  },
  async run({ args }) {
    const { group, prompt, c } = await groupAndPrompt(args);
    if (group) {
      const g = await addGroup(c, { prompt, code: args.code, title: args.title, ...group });
      if (args.json) return printJson(g);
      say.success(`Added group ${g.group}: ${g.tasks.map((t) => `${t.code} [${t.profile}]`).join(", ")}`);
      return print(`Start each (lazy start CODE), then compare them: lazy compare ${g.group}.`);
    }
    const t = await c.request<Task>(
      "POST",
      "/api/tasks",
      {
        prompt,
        code: args.code,
        profile: args.profile,
        title: args.title,
      },
      Client.LAUNCH_TIMEOUT_MS,
    );
    if (args.json) printJson(t);
    else say.success(`Added task ${t.id}${t.code ? ` (${t.code})` : ""}: ${t.title} [${t.profile}]`);
  },
});

const list = command({
  meta: { name: "task list", description: "List tasks" },
  args: { status: { type: "string", description: "Only tasks with this status" }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const tasks = await c.request<(Task & { queuePlace?: number | null })[]>(
      "GET",
      `/api/tasks${args.status ? `?status=${encodeURIComponent(args.status)}` : ""}`,
    );
    if (args.json) return printJson(tasks);
    if (!tasks.length) return print('No tasks yet: lazy task add "what to do".');
    print(
      table([
        ["ID", "CODE", "STATUS", "PROFILE", "TITLE"],
        ...tasks.map((t) => [t.id, t.code ?? "-", t.queuePlace ? `queued (#${t.queuePlace} for a turn)` : t.status, t.profile, t.title]),
      ]),
    );
  },
});

const show = command({
  meta: { name: "task show", description: "Show a task and its events" },
  args: { task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true }, ...jsonArg },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{ task: Task; events: TaskEvent[]; queuePlace?: number | null; spent: TaskSpent }>(
      "GET",
      `/api/tasks/${encodeURIComponent(args.task)}`,
    );
    // Its branch, base and files changed, the same reading as lazy diff --stat.
    const d = await fetchDiff(c, r.task.id, true);
    const finish = r.events.findLast((e) => e.kind === "finish")?.data.summary;
    const summary = typeof finish === "string" ? finish : null;
    if (args.json) return printJson({ ...r, branch: d.branch, base: d.base, tip: d.tip, diffstat: d.total, summary });
    const t = r.task;
    print(`${t.id}${t.code ? ` (${t.code})` : ""}  ${t.status}  [${t.profile}]`);
    if (r.queuePlace)
      print(
        `Queued:  #${r.queuePlace} for a turn: [limits] max_running turns run now; it starts by itself when one ends (lazy close ${t.code ?? t.id} drops it).`,
      );
    print(`Title:   ${t.title}`);
    if (t.group) print(`Group:   ${t.group} (a best-of-N candidate: lazy compare ${t.group})`);
    print(`Created: ${t.createdAt}   Updated: ${t.updatedAt}`);
    print(`Branch:  ${d.branch}${d.tip ? ` (tip ${d.tip.slice(0, 12)})` : " (not made yet)"}`);
    print(`Base:    ${d.base ? d.base.slice(0, 12) : "-"}${d.note ? `  ${d.note}` : ""}`);
    print(`Cost:    ${spentLine(r.spent)}`);
    if (d.files.length) print(`Changes:\n${statLines(d).join("\n")}`);
    if (summary !== null) print(`Summary (the agent's finish):\n${summary.replace(/^/gm, "  ")}`);
    print(`Prompt:\n${t.prompt.replace(/^/gm, "  ")}`);
    print("Events:");
    for (const e of r.events) print(`  ${e.at}  ${e.kind}  ${JSON.stringify(e.data)}`);
  },
});

/** What a task spent, as the daemon gives it: priced when each request was counted, per model served. */
type TaskSpent = Spent & { models: (Spent & { model: string })[] };

/** "$0.0123 (1,234 tokens in 3 requests; claude-sonnet-4-5)", naming a model lazy has no price for; "–" before any request. */
function spentLine(s: TaskSpent): string {
  if (!s.requests) return "– (no model request yet)";
  const models = s.models.map((m) => m.model || "no model named").join(", ");
  const line = `${costText(s, true)} (${s.tokens} tokens in ${s.requests} request(s)${models ? `; ${models}` : ""})`;
  const named = s.unpriced.filter(Boolean);
  // The remedy: a price of the project's own prices what comes next (what was counted stays).
  return named.length
    ? `${line}\n         ${named.map((m) => `[prices.${JSON.stringify(m)}]`).join(", ")} in lazy.toml prices later requests`
    : line;
}

const budget = command({
  meta: { name: "task budget", description: "Raise a task's budget: lazy task budget T +100000 (tokens), or +5 --usd" },
  args: {
    task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true },
    amount: { type: "positional", description: "What to add, e.g. +100000", required: true },
    usd: { type: "boolean", description: "The amount is dollars, not tokens" },
    ...jsonArg,
  },
  async run({ args }) {
    const m = /^\+?(\d+(?:\.\d+)?)$/.exec(args.amount.trim());
    if (!m || Number(m[1]) <= 0)
      throw new LazyError(
        "invalid_input",
        `"${args.amount}" is not an amount to add: give a positive number, like +100000 (tokens) or +5 --usd.`,
      );
    if (!args.usd && !Number.isInteger(Number(m[1]))) throw new LazyError("invalid_input", `Tokens come whole: "${args.amount}".`);
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{
      task: Task;
      limit: { tokens: number | null; usd: number | null };
      spent: Spent;
      over: { message: string } | null;
    }>("POST", `/api/tasks/${encodeURIComponent(args.task)}/budget`, args.usd ? { usd: Number(m[1]) } : { tokens: Number(m[1]) });
    if (args.json) return printJson(r);
    const ref = r.task.code ?? r.task.id;
    const added = args.usd ? `$${Number(m[1]).toFixed(2)}` : `${Number(m[1])} tokens`;
    const limit = args.usd ? r.limit.usd : r.limit.tokens;
    // No such budget set: the addition is kept, and counts once lazy.toml sets one.
    if (limit === null) {
      say.warn(
        `Task ${ref} has no ${args.usd ? "dollar" : "token"} budget ([budget] ${args.usd ? "per_task_usd" : "per_task_tokens"} is not set in lazy.toml): ${added} was added, and counts only once one is set.`,
      );
      return;
    }
    const now = args.usd
      ? `$${(r.limit.usd ?? 0).toFixed(2)} (${costText(r.spent)} spent)`
      : `${r.limit.tokens} tokens (${r.spent.tokens} spent)`;
    if (r.over) return say.warn(`Task ${ref}'s budget is now ${now}, ${added} added; it is still over: ${r.over.message}.`);
    say.success(`Task ${ref}'s budget is now ${now}, ${added} added.`);
    if (r.task.status === "waiting") print(`Its next turn can run: lazy send ${ref} "…" or lazy start ${ref}.`);
  },
});

export const task = command({
  meta: { name: "task", description: "Add, list and show tasks, and raise a task's budget" },
  subCommands: { add, list, show, budget },
});
