/**
 * What a pending launch is doing, shown while `lazy start`, `send` and `run` wait for the
 * daemon: a slow engine connection (an ssh:// tunnel), the image build's steps and the setup
 * command, read from the task's events (the daemon records them as they happen). A build step
 * has a timer, and under it the latest line the build printed (the daemon sends at most one a
 * second): on a terminal one updating line under the step's own; otherwise plain lines, one at
 * least every 5 s while a step runs. What the build printed is the agent's to influence (the
 * Dockerfile, the files it reads): it is shown inert (terminal.ts inert), never obeyed. No escape
 * bytes either way: the updating line is a carriage return and padding.
 */

import type { Task, TaskEvent } from "../store";
import type { Client } from "./client";
import { err } from "./out";
import { inert } from "./terminal";
import { say } from "./voice";

const POLL_MS = 300;
/** Without a terminal, a running step says so at least this often, output or not. */
export const QUIET_MS = 4000;

const seconds = (ms: number) => `${Math.max(0, Math.floor(ms / 1000))}s`;
const size = (mb: number) => (mb >= 1000 ? `${(mb / 1000).toFixed(1)} GB` : `${Math.round(mb / 10) * 10} MB`);
const duration = (s: number) => (s >= 90 ? `${Math.round(s / 60)} min` : `${Math.round(s / 5) * 5 || 5} s`);

export class LaunchProgress {
  private width = 0;
  private readonly tty = Boolean(process.stderr.isTTY);
  /** The step under way: when it began (the daemon's clock, as recorded) and its latest output. */
  private step?: { at: number; output?: string };
  private shownAt = 0;
  /** What the updating line shows now (redrawn only when it changes). */
  private shown = "";

  /** Show one event if it is a launch step; returns whether it was one. */
  show(e: TaskEvent): boolean {
    const d = e.data as Record<string, unknown>;
    if (e.kind === "build") {
      if (typeof d.rebuild === "string") this.line(`The task image is out of date: ${d.rebuild}.`);
      else if (typeof d.what === "string") this.line(this.building(d.what, d.expect));
      else if (typeof d.progress === "string") this.stepBegins(d.progress, Date.parse(e.at));
      else if (typeof d.output === "string") this.output(d.output);
      else if (typeof d.done === "string") {
        this.step = undefined;
        this.line(`Built ${d.done}.`);
      }
      return true;
    }
    if (e.kind === "engine") {
      this.line(`Connecting to the Docker engine at ${d.connecting}…`);
      return true;
    }
    if (e.kind === "setup") {
      this.step = undefined;
      if (typeof d.command === "string") this.line(`Running [container] setup: ${d.command}`);
      else this.line(`Setup finished (exit code ${d.code}).`);
      return true;
    }
    return false;
  }

  /** The clock moved: the step's timer on a terminal; without one, a line when the step was quiet too long. */
  tick(now = Date.now()): void {
    if (!this.step) return;
    if (this.tty) this.live(now);
    else if (now - this.shownAt >= QUIET_MS) this.plain(`    [${seconds(now - this.step.at)}] (still running, no new output)`);
  }

  /** End the updating line, if one is open. */
  end(): void {
    if (this.width) err("\n");
    this.width = 0;
  }

  private building(what: string, expect: unknown): string {
    const e = expect as { mb?: unknown; s?: unknown } | undefined;
    if (typeof e?.mb === "number" && typeof e.s === "number")
      return `Building the task image from ${what}: a one-off build, about ${size(e.mb)} and ${duration(e.s)} on 2 cores with a fast network; later launches reuse it…`;
    return `Building the task image from ${what} (once per Dockerfile and the files it copies; later launches reuse it)…`;
  }

  private stepBegins(text: string, at: number): void {
    this.step = { at: Number.isFinite(at) ? at : Date.now() };
    if (!this.tty) {
      this.plain(`  ${text}`);
      return;
    }
    // The step's own line stays; the live line (timer and output) opens under it.
    const cols = (process.stderr.columns || 100) - 1;
    const t = inert(`  ${text}`, cols);
    err(`\r${pad(t, this.width)}\n`);
    this.width = 0;
    this.live(Date.now());
  }

  private output(text: string): void {
    if (!this.step) this.step = { at: Date.now() };
    this.step.output = text;
    if (this.tty) this.live(Date.now());
    else this.plain(`    [${seconds(Date.now() - this.step.at)}] ${inert(text)}`);
  }

  /** The updating line under a step: its timer and the build's latest line. */
  private live(now: number): void {
    if (!this.step) return;
    const cols = (process.stderr.columns || 100) - 1;
    const t = inert(`    ${seconds(now - this.step.at).padStart(4)}  ${this.step.output ?? ""}`.trimEnd(), cols);
    if (t === this.shown && this.width) return;
    err(`\r${pad(t, this.width)}`);
    this.shown = t;
    this.width = Bun.stringWidth(t);
  }

  private plain(text: string): void {
    this.shownAt = Date.now();
    say.info(inert(text, 300));
  }

  private line(text: string): void {
    this.end();
    this.shownAt = Date.now();
    say.info(text);
  }
}

/**
 * Run `work` (the launch request) while showing the task's launch steps. Returns the work's
 * result and the id of the last event seen, so a caller that follows the task's events next
 * does not print them twice.
 */
export async function whileLaunching<T>(c: Client, ref: string, work: () => Promise<T>): Promise<{ result: T; after: number }> {
  const first = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${encodeURIComponent(ref)}`);
  const id = first.task.id;
  let after = first.events.at(-1)?.id ?? 0;
  const progress = new LaunchProgress();
  let settled = false;
  const poll = async () => {
    const r = await c.request<{ events: TaskEvent[] }>("GET", `/api/tasks/${id}/events?after=${after}`).catch(() => ({ events: [] }));
    for (const e of r.events) {
      if (!progress.show(e)) return; // the turn itself began: its events are the caller's
      after = e.id;
    }
  };
  const loop = (async () => {
    while (!settled) {
      await poll();
      progress.tick();
      await Bun.sleep(POLL_MS);
    }
  })();
  let result: T;
  try {
    result = await work();
  } finally {
    settled = true;
    await loop;
    await poll();
    progress.end();
  }
  return { result, after };
}

/** `t` padded with spaces to `columns` as a terminal counts them (wide characters take two). */
const pad = (t: string, columns: number) => t + " ".repeat(Math.max(0, columns - Bun.stringWidth(t)));
