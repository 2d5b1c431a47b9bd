/**
 * Project memory in the runner: handed to each new task's agent within a bound (appended to
 * its first prompt), and compacted by one of lazy's own model calls once it passes the bound.
 * The old notes stay until the compacted ones are stored; a failed compaction loses nothing.
 */
import type { Database } from "bun:sqlite";
import { Memory } from "../store";
import type { Logger } from "../util/log";
import type { OwnCalls } from "./own-calls";

const MEMORY_BOUND = Memory.BOUND;

/** The first prompt of a task, with the project's memory after it (when there is any). */
export function withMemory(db: Database, prompt: string): string {
  const notes = Memory.within(db, MEMORY_BOUND);
  if (!notes.length) return prompt;
  return `${prompt}\n\n---\nProject memory (short notes people and agents keep about this project; the lazy MCP tools memory_read and memory_write reach it):\n${notes.map((n) => `- ${n.text}`).join("\n")}`;
}

export class Compactor {
  private running: Promise<void> | undefined;

  constructor(
    private db: Database,
    private calls: Pick<OwnCalls, "ask">,
    private log: Logger,
  ) {}

  /** Compact when memory has passed its bound (at most one compaction at a time). */
  maybe(): Promise<void> {
    if (this.running || Memory.size(this.db) <= MEMORY_BOUND) return this.running ?? Promise.resolve();
    this.running = this.compact().finally(() => (this.running = undefined));
    return this.running;
  }

  private async compact(): Promise<void> {
    const notes = Memory.list(this.db);
    const upTo = notes.at(-1)?.id ?? 0;
    const prompt = [
      `Rewrite these notes about a software project into fewer, shorter notes that keep every fact still useful to someone starting a task in it. At most ${Math.floor(MEMORY_BOUND / 2)} characters in all.`,
      "Answer with the notes only, one per line, each starting with '- '. No heading, no preamble. Do not run any tool.",
      "",
      ...notes.map((n) => `- ${n.text}`),
    ].join("\n");
    try {
      const answer = await this.calls.ask(prompt, { purpose: "memory compaction" });
      const lines = answer.text
        .split("\n")
        .map((l) => l.replace(/^\s*[-*]\s+/, "").trim())
        .filter((l) => l && l.length <= Memory.MAX_NOTE);
      if (!lines.length) throw new Error("the model answered with no notes");
      Memory.replaceUpTo(this.db, upTo, lines);
      this.log.info(`project memory compacted: ${notes.length} notes into ${lines.length}`);
    } catch (e) {
      this.log.warn(`project memory was not compacted (its notes are all kept): ${(e as Error).message}`);
    }
  }
}
