/**
 * [usage_pause] applied: before any turn starts (start, send, run, and turns a human
 * queued), the credential the task's profile bills is checked against its latest reading.
 * Paused, the turn is held (store: HeldTurns) and the task is `waiting` with reason
 * `usage_pause`, the credential, the window and its reset. When the reset passes, lazy starts
 * the held turns by itself, oldest first, one at a time.
 */
import type { Database } from "bun:sqlite";
import type { Config, ResolvedProfile } from "../config";
import type { ModelProxy } from "../proxy";
import { canMove, HeldTurns, isFinal, type Status, type Task, Tasks } from "../store";
import type { Logger } from "../util/log";
import { type Pause, pauseOf } from "./pause";

export interface HoldDeps {
  db: Database;
  proxy: Pick<ModelProxy, "credentialFor" | "stats" | "state">;
  config: () => Config;
  log: Logger;
  move: (task: Task, to: Status, data: Record<string, unknown>) => Task;
  event: (task: Task, kind: string, data: Record<string, unknown>) => void;
  /** Start a task's turn (the runner's own start). */
  start: (taskId: string, message: string | undefined) => Promise<Task>;
  ref: (t: Task) => string;
}

/** A little after the reset: the provider's clock and ours may differ by a moment. */
const AFTER_RESET_MS = 500;

export class Holds {
  private timer: Timer | undefined;
  private resuming = false;

  constructor(private d: HoldDeps) {}

  /** Is the credential `profile` bills paused now? */
  async pauseFor(profile: ResolvedProfile): Promise<Pause | null> {
    const credential = this.d.proxy.credentialFor(profile.name);
    if (!credential || this.d.proxy.state !== "ready") return null;
    const stats = await this.d.proxy.stats();
    return pauseOf(this.d.config().usage_pause, stats.limits, credential);
  }

  /** Hold the task's turn: it is `waiting` (reason usage_pause) until the reset. */
  hold(task: Task, message: string | undefined, pause: Pause): Task {
    HeldTurns.put(this.d.db, task.id, message ?? null, {
      credential: pause.credential,
      window: pause.window,
      resetsAt: Date.parse(pause.resetsAt),
    });
    const why = {
      reason: "usage_pause",
      credential: pause.credential,
      window: pause.window,
      resetsAt: pause.resetsAt,
      usedPercent: pause.usedPercent,
      detail: pause.detail,
    };
    this.d.log.info(`task ${this.d.ref(task)}: turn held by [usage_pause] (${pause.credential}: ${pause.detail}) until ${pause.resetsAt}`);
    let t = task;
    if (canMove(task.status, "waiting")) t = this.d.move(task, "waiting", why);
    else this.d.event(task, "held", why);
    this.schedule();
    return t;
  }

  /** Set the timer for the soonest reset among held turns. */
  schedule(): void {
    clearTimeout(this.timer);
    const next = HeldTurns.nextReset(this.d.db);
    if (next === null) return;
    this.timer = setTimeout(() => void this.resume(), Math.max(0, next - Date.now()) + AFTER_RESET_MS);
    this.timer.unref();
  }

  /** Start the held turns whose pause has ended, oldest first; keep the others. */
  async resume(): Promise<void> {
    if (this.resuming) return;
    this.resuming = true;
    try {
      for (const h of HeldTurns.all(this.d.db)) {
        let task: Task;
        try {
          task = Tasks.resolve(this.d.db, h.task_id);
        } catch {
          HeldTurns.remove(this.d.db, h.id);
          continue;
        }
        if (isFinal(task.status)) {
          HeldTurns.remove(this.d.db, h.id);
          continue;
        }
        if (task.status === "running") continue; // a human started it meanwhile; its turn comes after
        if ((h.resets_at ?? 0) > Date.now()) continue;
        HeldTurns.remove(this.d.db, h.id);
        // start() checks the pause again: still paused (a new reading), it is held anew.
        await this.d.start(task.id, h.message ?? undefined).catch((e: Error) => {
          this.d.log.warn(`task ${this.d.ref(task)}: its held turn did not start: ${e.message}`);
        });
      }
    } finally {
      this.resuming = false;
      this.schedule();
    }
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}
