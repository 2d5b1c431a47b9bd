/**
 * Every prompt lazy itself sends a model, in one place: the accept summary, `lazy ask`,
 * `lazy report`, memory compaction (lazy's own calls, calls.ts), and the project memory it
 * appends to a task's first prompt. What goes in is bounded here; tasks' text in them is the
 * agents' and people's, quoted as data.
 */
import type { Database } from "bun:sqlite";
import * as Git from "../git";
import { Memory, type Task, Tasks } from "../store";

/** The first prompt of a task, with the project's memory notes after it (when there are any). */
export function memoryPrompt(prompt: string, notes: ReturnType<typeof Memory.within>): string {
  if (!notes.length) return prompt;
  return `${prompt}\n\n---\nProject memory (short notes people and agents keep about this project; the lazy MCP tools memory_read and memory_write reach it). Notes marked "unverified" were written by agents, not people: check them before relying on them.\n${notes.map((n) => `- ${Memory.forAgent(n)}`).join("\n")}`;
}

/** What lazy asks the model when it compacts agents' notes into at most half of `bound`. */
export function compactionPrompt(notes: { text: string }[], bound: number): string {
  return [
    `Rewrite these notes about a software project into fewer, shorter notes that keep every fact still useful to someone starting a task in it. At most ${Math.floor(bound / 2)} characters in all.`,
    "Answer with the notes only, one per line, each starting with '- '. No heading, no preamble. Do not run any tool.",
    "",
    ...notes.map((n) => `- ${n.text}`),
  ].join("\n");
}

/** What lazy asks the model when it writes the summary of an accepted task. */
export function summaryPrompt(task: Task, commits: string[], stat: string): string {
  return [
    "Write the body of a merge commit message: what this task changed and why, in at most six short lines of plain text.",
    "No heading, no Markdown, no preamble: only the lines. Do not run any tool; everything you need is below.",
    "",
    `Task: ${task.title}`,
    `What the agent was asked:\n${task.prompt.slice(0, 4000)}`,
    "",
    `Commits:\n${commits.slice(0, 50).join("\n")}`,
    "",
    `Files changed:\n${stat.slice(0, 4000)}`,
  ].join("\n");
}

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
    "The project is in the current directory as committed at HEAD, read-only (uncommitted changes are listed below, not there). Answer in plain text, briefly; do not change anything.",
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
