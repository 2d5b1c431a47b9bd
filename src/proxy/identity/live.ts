/**
 * Which tasks' grants redeem now (docs: "Lifetime"): a task's placeholder works only while
 * something it was minted for runs — one of its turns, one of lazy's own calls about it, or a
 * host process that asked for it through the API with its pid (lazy chat, lazy pair). Kept on
 * the main thread; each change is posted to the proxy threads (the request path reads their
 * copy). The pids are kept in `live-pids.json` in the state folder, so a restarted daemon does
 * not cut off a chat that still runs (turns are held again from the store: runner).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LazyError } from "../../util/errors";
import { writeFileAtomic } from "../../util/files";

export const PIDS_FILE = "live-pids.json";
/** How often held pids are checked: a dead chat's placeholder stops within this. */
const SWEEP_MS = 1_000;

export class Live {
  /** Task id → what holds it ("turn", "call:<id>", "pid:<n>"). */
  private held = new Map<string, Set<string>>();
  private pids = new Map<string, { key: string; pid: number }>();
  private sweep: Timer | undefined;

  private file: string;

  /** `changed` posts the new list to the proxy threads. */
  constructor(
    stateDir: string,
    private changed: (live: string[]) => void,
  ) {
    this.file = join(stateDir, PIDS_FILE);
    let saved: unknown;
    try {
      saved = JSON.parse(readFileSync(this.file, "utf8"));
    } catch {} // none yet, or unreadable: no pid holds
    for (const h of Array.isArray(saved) ? saved : [])
      if (typeof h?.key === "string" && Number.isInteger(h?.pid) && h.pid > 0 && alive(h.pid)) this.holdPid(h.key, h.pid);
    this.save();
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify([...this.pids.values()].map((h) => ({ key: h.key, pid: h.pid }))));
  }

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

  /** Hold `key` (a task id, or a host grant's) while process `pid` lives (checked every second). */
  holdWhile(key: string, pid: number): void {
    if (!alive(pid)) throw new LazyError("invalid_input", `No process ${pid} runs on this host: a grant held by a pid needs a live one.`);
    this.holdPid(key, pid);
    this.save();
  }

  private holdPid(key: string, pid: number): void {
    this.pids.set(`${key} ${pid}`, { key, pid });
    this.sweep ??= setInterval(() => {
      let gone = false;
      for (const [k, h] of this.pids)
        if (!alive(h.pid)) {
          this.pids.delete(k);
          this.release(h.key, `pid:${h.pid}`);
          gone = true;
        }
      if (gone) this.save();
    }, SWEEP_MS);
    this.sweep.unref();
    this.hold(key, `pid:${pid}`);
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
