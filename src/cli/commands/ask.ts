import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, jsonArg, print, printJson } from "../command";
import { promptArgs, promptFrom } from "../prompt-input";

export const ask = command({
  meta: { name: "ask", description: "Ask a model about the project and its tasks (one of lazy's own calls, through the proxy)" },
  args: {
    ...promptArgs("question", "What you want to know"),
    task: { type: "string", description: "About this task (a code, or ≥ 4 hex chars of its id)" },
    ...jsonArg,
  },
  async run({ args, rawArgs }) {
    const question = await promptFrom("question", args.question, args.file);
    const c = await Client.connect(findProjectRoot());
    const named = rawArgs.some((a) => a === "--task" || a.startsWith("--task="));
    const r = await c.request<{ answer: string; profile: string }>(
      "POST",
      "/api/ask",
      { question, ...(named ? { task: args.task ?? "" } : {}) },
      15 * 60_000,
    );
    if (args.json) return printJson(r);
    print(r.answer);
  },
});

export const report = command({
  meta: { name: "report", description: "A Markdown report across tasks, written by a model through the proxy (one of lazy's own calls)" },
  args: {
    since: { type: "string", description: "What moved since then: 30m, 12h, 7d (default), or an ISO time" },
    ...jsonArg,
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const r = await c.request<{ report: string; since: string }>("POST", "/api/report", { since: args.since ?? "7d" }, 15 * 60_000);
    if (args.json) return printJson(r);
    print(r.report);
  },
});
