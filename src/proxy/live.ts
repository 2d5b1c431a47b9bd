/**
 * Which tasks' grants redeem now (docs: "Lifetime"): a task's placeholder works only while
 * something it was minted for runs — one of its turns, one of lazy's own calls about it, or a
 * host process that asked for it through the API with its pid. Kept on the main thread; each
 * change is posted to the proxy threads (the request path reads their copy).
 */
import { LazyError } from "../util/errors";

export class Live {
  /** Task id → what holds it ("turn", "call:<id>", "pid:<n>"). */
  private held = new Map<string, Set<string>>();
  private pids = new Map<string, { taskId: string; pid: number }>();
  private sweep: Timer | undefined;

  /** `changed` posts the new list to the proxy threads. */
  constructor(private changed: (live: string[]) => void) {}

  list(): string[] {
    return [...this.held.keys()];
  }

  has(taskId: string): boolean {
    return this.held.has(taskId);
  }

  hold(taskId: string, holder: string): void {
    const set = this.held.get(taskId) ?? new Set<string>();
    if (set.has(holder)) return;
    set.add(holder);
    this.held.set(taskId, set);
    this.changed(this.list());
  }

  release(taskId: string, holder: string): void {
    const set = this.held.get(taskId);
    if (!set?.delete(holder) || set.size) return;
    this.held.delete(taskId);
    this.changed(this.list());
  }

  /** Hold the task while process `pid` lives (checked every few seconds). */
  holdWhile(taskId: string, pid: number): void {
    if (!alive(pid)) throw new LazyError("invalid_input", `No process ${pid} runs on this host: a grant held by a pid needs a live one.`);
    this.pids.set(`${taskId} ${pid}`, { taskId, pid });
    this.sweep ??= setInterval(() => {
      for (const [k, h] of this.pids)
        if (!alive(h.pid)) {
          this.pids.delete(k);
          this.release(h.taskId, `pid:${h.pid}`);
        }
    }, 5_000);
    this.sweep.unref();
    this.hold(taskId, `pid:${pid}`);
  }

  stop(): void {
    clearInterval(this.sweep);
  }
}

/** Whether a process runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
