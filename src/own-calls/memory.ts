/**
 * Project memory in lazy's own calls: handed to each new task's agent within a bound (appended to
 * its first prompt, agents' notes marked unverified), and compacted by one of lazy's own model
 * calls once it passes the bound. Only agents' notes are compacted: a person's note is never
 * dropped or rewritten. The old notes stay until the compacted ones are stored; a failed
 * compaction loses nothing. An agent cannot compact memory at will: what it writes never starts
 * a compaction sooner than AGENT_COMPACT_EVERY_MS after the last one (or the daemon's start); it
 * is put off until then (and memory_write is bounded per turn, mcp/bounds.ts). A person's note
 * starts one at once.
 */
import type { Database } from "bun:sqlite";
import { Memory } from "../store";
import type { Logger } from "../util/log";
import type { OwnCalls } from "./calls";
import { compactionPrompt, memoryPrompt } from "./prompts";

const MEMORY_BOUND = Memory.BOUND;
/** How often what agents write may start a compaction (each is a model call, and rewrites their notes). */
export const AGENT_COMPACT_EVERY_MS = 60 * 60 * 1000;

/** The first prompt of a task, with the project's memory after it (when there is any). */
export function withMemory(db: Database, prompt: string): string {
  return memoryPrompt(prompt, Memory.within(db, MEMORY_BOUND));
}

export class Compactor {
  private running: Promise<void> | undefined;
  private last: number;
  private later: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private db: Database,
    private calls: Pick<OwnCalls, "ask">,
    private log: Logger,
    private now = Date.now,
  ) {
    this.last = now();
  }

  /**
   * Compact when memory has passed its bound and agents' notes are there to compact (at most one
   * compaction at a time). `by`: who wrote the note that asks; an agent's is put off until
   * AGENT_COMPACT_EVERY_MS after the last compaction.
   */
  maybe(by: "human" | "agent" = "human"): Promise<void> {
    if (this.running) return this.running;
    if (Memory.size(this.db) <= MEMORY_BOUND || Memory.compactable(this.db).length < 2) return Promise.resolve();
    const wait = this.last + AGENT_COMPACT_EVERY_MS - this.now();
    if (by === "agent" && wait > 0) {
      if (!this.later) {
        this.later = setTimeout(() => {
          this.later = undefined;
          void this.maybe("agent");
        }, wait);
        this.later.unref?.();
      }
      return Promise.resolve();
    }
    this.last = this.now();
    this.running = this.compact().finally(() => (this.running = undefined));
    return this.running;
  }

  private async compact(): Promise<void> {
    const notes = Memory.compactable(this.db);
    const upTo = notes.at(-1)?.id ?? 0;
    const prompt = compactionPrompt(notes, MEMORY_BOUND);
    try {
      const answer = await this.calls.ask(prompt, { purpose: "memory compaction" });
      const lines = answer.text
        .split("\n")
        .map((l) => l.replace(/^\s*[-*]\s+/, "").trim())
        .filter((l) => l && l.length <= Memory.MAX_NOTE);
      if (!lines.length) throw new Error("the model answered with no notes");
      Memory.replaceUpTo(this.db, upTo, lines);
      this.log.info(`project memory compacted: ${notes.length} agents' notes into ${lines.length} (people's notes are kept as they are)`);
    } catch (e) {
      this.log.warn(`project memory was not compacted (its notes are all kept): ${(e as Error).message}`);
    }
  }
}
