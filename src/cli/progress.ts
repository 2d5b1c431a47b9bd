/**
 * What a pending launch is doing, shown while `lazy start`, `send` and `run` wait for the
 * daemon: a slow engine connection (an ssh:// tunnel), the image build's steps and the setup
 * command, read from the task's events (the daemon records them as they happen). On a terminal
 * the build's steps share one updating line; otherwise each step is a plain line. No escape
 * bytes either way: the updating line is a carriage return and padding.
 */

import type { Task, TaskEvent } from "../store";
import type { Client } from "./client";
import { err } from "./out";
import { say } from "./voice";

const POLL_MS = 300;

export class LaunchProgress {
  private width = 0;
  private readonly tty = Boolean(process.stderr.isTTY);

  /** Show one event if it is a launch step; returns whether it was one. */
  show(e: TaskEvent): boolean {
    const d = e.data as Record<string, unknown>;
    if (e.kind === "build") {
      if (typeof d.rebuild === "string") this.line(`The task image is out of date: ${d.rebuild}.`);
      else if (typeof d.what === "string")
        this.line(`Building the task image from ${d.what} (once per Dockerfile and the files it copies; later launches reuse it)…`);
      else if (typeof d.progress === "string") this.step(`  ${d.progress}`);
      else if (typeof d.output === "string") this.tty && this.step(`    ${d.output}`);
      else if (typeof d.done === "string") this.line(`Built ${d.done}.`);
      return true;
    }
    if (e.kind === "engine") {
      this.line(`Connecting to the Docker engine at ${d.connecting}…`);
      return true;
    }
    if (e.kind === "setup") {
      if (typeof d.command === "string") this.line(`Running [container] setup: ${d.command}`);
      else this.line(`Setup finished (exit code ${d.code}).`);
      return true;
    }
    return false;
  }

  /** End the updating line, if one is open. */
  end(): void {
    if (this.width) err("\n");
    this.width = 0;
  }

  private line(text: string): void {
    this.end();
    say.info(text);
  }

  private step(text: string): void {
    if (!this.tty) {
      say.info(text);
      return;
    }
    const cols = (process.stderr.columns || 100) - 1;
    const t = text.length > cols ? `${text.slice(0, cols - 1)}…` : text;
    err(`\r${t.padEnd(this.width)}`);
    this.width = t.length;
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
