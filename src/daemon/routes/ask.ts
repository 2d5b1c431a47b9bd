/**
 * lazy's own model calls a person asks for: `lazy ask "question" [--task T]` (about the project
 * and its tasks). The answer comes from a throwaway container on the agent profile, through the
 * proxy (runner/own-calls.ts).
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { body } from "./input";
import { z } from "zod";
import * as Git from "../../git";
import { Tasks, type Task } from "../../store";
import type { Runner } from "../../runner";
import { promptSchema } from "../../util/prompt";
import { parseSince } from "./watch";

export interface AskDeps {
  db: Database;
  root: string;
  runner: { calls: Pick<Runner["calls"], "ask"> };
}

const Ask = z.strictObject({ question: promptSchema("question").pipe(z.string().max(8000)), task: z.string().optional() });

/** Where the project's checkout stands now: its branch, last commits and uncommitted changes (read off the daemon's thread). */
async function gitState(root: string): Promise<string> {
  const run = async (args: string[]) => ((await Git.gitRead(root, args)) ?? "").trim().split("\n").slice(0, 40).join("\n");
  const [branch, log, status] = await Promise.all([
    run(["symbolic-ref", "--quiet", "--short", "HEAD"]),
    run(["log", "--oneline", "--no-decorate", "-n", "15"]),
    // --no-optional-locks: a status refreshes the index under index.lock, which would race the
    // user's own git in their checkout; lazy only reads.
    run(["--no-optional-locks", "status", "--short", "--untracked-files=normal"]),
  ]);
  return [
    `Git: on branch ${branch || "(detached)"}`,
    `Last commits:\n${log || "(none)"}`,
    `Uncommitted changes (git status --short):\n${status || "(none)"}`,
  ].join("\n");
}

/** What a question about the project is asked with: the tasks, where git stands, and one task's story when named. */
export async function askPrompt(db: Database, root: string, question: string, task: Task | undefined): Promise<string> {
  const tasks = Tasks.list(db).slice(-200);
  const lines = [
    "You answer a question about a software project that lazy (a tool that runs coding agents on tasks) manages.",
    "The project is in the current directory, read-only. Answer in plain text, briefly; do not change anything.",
    "",
    `Tasks (code or id, status, title):\n${tasks.map((t) => `- ${t.code ?? t.id.slice(0, 8)}  ${t.status}  ${t.title}`).join("\n") || "(none)"}`,
    "",
    await gitState(root),
  ];
  if (task) {
    const story = Tasks.events(db, task.id)
      .filter((e) => ["user", "message", "result", "status", "progress", "question", "finish", "summary"].includes(e.kind))
      .slice(-60)
      .map((e) => `${e.at} ${e.kind}: ${JSON.stringify(e.data).slice(0, 400)}`);
    lines.push(
      "",
      `The question is about task ${task.code ?? task.id} (${task.status}): ${task.title}`,
      `Its prompt:\n${task.prompt.slice(0, 4000)}`,
      `What happened:\n${story.join("\n")}`,
    );
  }
  lines.push("", `Question: ${question}`);
  return lines.join("\n");
}

/** What `lazy report` asks: a Markdown report across the tasks that moved since `since`. */
export function reportPrompt(db: Database, since: number): string {
  const tasks = Tasks.list(db)
    .filter((t) => Date.parse(t.updatedAt) >= since)
    .slice(-200);
  const lines = tasks.map((t) => {
    const last = Tasks.events(db, t.id)
      .filter((e) => ["result", "summary", "status", "finish"].includes(e.kind))
      .slice(-6);
    return `## ${t.code ?? t.id.slice(0, 8)} — ${t.title} (${t.status})\n${last.map((e) => `- ${e.at} ${e.kind}: ${JSON.stringify(e.data).slice(0, 400)}`).join("\n")}`;
  });
  return [
    `Write a short Markdown report for the people on this project of what its coding agents did since ${new Date(since).toISOString()}: what was done, what waits for a human, what failed and why.`,
    "Use a heading per part and a bullet per task (by its code). Answer with the report only. Do not run any tool.",
    "",
    lines.join("\n\n") || "(no task moved in that time)",
  ].join("\n");
}

export function askRoutes(d: AskDeps) {
  return new Elysia()
    .post(
      "/api/report",
      async ({ body: { since } }) => {
        const from = parseSince(since);
        const answer = await d.runner.calls.ask(reportPrompt(d.db, from), { purpose: "lazy report" });
        return { report: answer.text, since: new Date(from).toISOString(), profile: answer.profile };
      },
      body(z.strictObject({ since: z.string().default("7d") })),
    )
    .post(
      "/api/ask",
      async ({ body: input }) => {
        const task = input.task !== undefined ? Tasks.resolveFilter(d.db, [input.task])![0] : undefined;
        const answer = await d.runner.calls.ask(await askPrompt(d.db, d.root, input.question, task), { task, purpose: "lazy ask" });
        return { answer: answer.text, profile: answer.profile, task: task ?? null };
      },
      body(Ask),
    );
}
