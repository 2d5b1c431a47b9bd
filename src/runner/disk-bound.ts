/**
 * `[container.limits] disk` applied: what a running task fills — its worktree, its folders in
 * the state folder (turns, home, harness, git) and its container's writable layer (/tmp is in
 * it) — is held to the bound. Crossing it stops the turn through `halt` with a `refused` event
 * naming the bound, what was used and how to raise it; the task then waits (turn-watch.ts), and
 * goes on with the next `lazy send` once it is under its bound again (or the bound was raised).
 * The same stop comes when the disk holding lazy's state runs low (disk/reserve.ts).
 *
 * Cheap by design (bench/disk.ts): walking a big worktree every second costs too much, so a
 * task is walked (du, in a child process) only when it could have crossed its bound. Each
 * second the filesystems its files live on are asked how much they have free (statfs, ~1 µs);
 * every drop in free space since a task's last walk is counted as its own possible growth
 * (whoever wrote it: an overestimate, never an underestimate, but for space freed and filled
 * within the same second). A task is walked when that estimate reaches its bound, so one far
 * from it is walked rarely and one near it often, and otherwise every 2 minutes (30 s past half
 * of its bound, or when its layer's filesystem cannot be asked) in case space freed elsewhere
 * hid its writes.
 */
import type { Database } from "bun:sqlite";
import { statSync } from "node:fs";
import { type Config, resolveLimits } from "../config";
import type { Runtime } from "../containers";
import { human, space, walk } from "../disk";
import { Runs, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import type { Ledger } from "./ledger";

/** How often the filesystems are asked. */
const TICK_MS = 1000;
/** The longest a running task goes unwalked: far from its bound, near it, and with no filesystem to ask. */
const FAR_MS = 120_000;
const NEAR_MS = 30_000;

export interface DiskBoundDeps {
  db: Database;
  log: Logger;
  config: () => Config;
  ledger: Ledger;
  docker: () => Promise<Runtime>;
  stateDir: string;
  taskDir: (t: Task) => string;
  worktree: (t: Task) => string;
  /** Stop the task's container whole (reconcile.ts halt): what is still wrong, if anything. */
  halt: (t: Task) => Promise<string | undefined>;
  /** Why no turn may write now (the disk under lazy's floor: disk/reserve.ts), or undefined. */
  low: () => string | undefined;
}

/** What one task takes on disk. */
export interface Usage {
  total: number;
  /** Its worktree and its folders in the state folder. */
  folders: number;
  /** Its container's writable layer; undefined when it has no container (yet) or it could not be read. */
  layer: number | undefined;
}

interface Watched {
  used: number | undefined;
  /** Free space lost on its filesystems since its last walk began. */
  grown: number;
  next: number;
  measuring: boolean;
  stopped: boolean;
}

export class DiskBound {
  private timer: Timer | undefined;
  private watched = new Map<string, Watched>();
  /** Free bytes at the last tick, per filesystem (by device) holding tasks' files. */
  private gates = new Map<number, { path: string; free: number | undefined }>();
  /** Whether the layers' filesystem is one of the gates (a local engine lazy may ask). */
  private layerGated = false;
  private gatesSet: Promise<void> | undefined;
  /** A container's writable layer on this host, asked of the engine once per container. */
  private layers = new Map<string, string | undefined>();

  constructor(private d: DiskBoundDeps) {}

  start(): void {
    this.timer = setInterval(() => {
      try {
        this.tick();
      } catch (e) {
        this.d.log.warn(`the disk bound's watch: ${(e as Error).message}`);
      }
    }, TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private bound(): { bytes: number; written: string } {
    const l = this.d.config().container.limits;
    return { bytes: resolveLimits(l).disk, written: l.disk };
  }

  /** The filesystems to ask: the state folder's, and the engine's data folder's when it is this host's. */
  private setGates(): Promise<void> {
    this.gatesSet ??= (async () => {
      const add = (path: string) => {
        try {
          const dev = statSync(path).dev;
          if (!this.gates.has(dev)) this.gates.set(dev, { path, free: space(path)?.free });
          return true;
        } catch {
          return false;
        }
      };
      add(this.d.stateDir);
      const root = await this.d
        .docker()
        .then((r) => r.dataRoot())
        .catch(() => undefined);
      this.layerGated = !!root && add(root);
    })();
    return this.gatesSet;
  }

  /** One second's work: a statfs per filesystem; a walk only for a task that could have crossed its bound. */
  tick(): void {
    const running = Tasks.list(this.d.db, { status: "running" });
    const ids = new Set(running.map((t) => t.id));
    for (const id of this.watched.keys()) if (!ids.has(id)) this.watched.delete(id);
    if (this.layers.size > 4 * running.length + 64) this.layers.clear();
    if (!running.length) {
      for (const g of this.gates.values()) g.free = undefined;
      return;
    }
    void this.setGates();
    const low = this.d.low();
    if (low) {
      for (const t of running) void this.stopTurn(t, low, { low: true });
      return;
    }
    const bound = this.bound();
    if (!bound.bytes) return;
    let drop = 0;
    for (const g of this.gates.values()) {
      const free = space(g.path)?.free;
      if (free !== undefined && g.free !== undefined && free < g.free) drop += g.free - free;
      g.free = free;
    }
    const now = Date.now();
    for (const t of running) {
      let w = this.watched.get(t.id);
      if (!w) {
        w = { used: undefined, grown: 0, next: 0, measuring: false, stopped: false };
        this.watched.set(t.id, w);
      }
      w.grown += drop;
      if (w.measuring || w.stopped) continue;
      if (w.used !== undefined && w.used + w.grown < bound.bytes && now < w.next) continue;
      w.measuring = true;
      w.grown = 0;
      void this.measure(t)
        .then((u) => {
          w.used = u.total;
          const near = u.total >= bound.bytes / 2 || !this.layerGated;
          w.next = Date.now() + (near ? NEAR_MS : FAR_MS);
          if (u.total > bound.bytes) return this.stopTurn(t, this.overMessage(t, u, bound), { used: u.total, bound: bound.bytes, ...u });
        })
        .catch((e: unknown) => this.d.log.warn(`measuring task ${this.d.ledger.ref(t)}'s disk: ${(e as Error).message}`))
        .finally(() => (w.measuring = false));
    }
  }

  /** What the task takes now: one walk of its folders and its container's writable layer. */
  async measure(task: Task): Promise<Usage> {
    const folders = [this.d.taskDir(task), this.d.worktree(task)];
    const container = Runs.get(this.d.db, task.id).container_id;
    const docker = container ? await this.d.docker().catch(() => undefined) : undefined;
    let layerDir = container ? this.layers.get(container) : undefined;
    if (container && docker && !this.layers.has(container)) {
      layerDir = await docker.layerDir(container);
      this.layers.set(container, layerDir);
    }
    const walked = await walk(layerDir ? [...folders, layerDir] : folders);
    if (walked.problems.length)
      this.d.log.repeated("warn", `disk-walk-${task.id}`, `task ${this.d.ledger.ref(task)}'s disk: du: ${walked.problems.join("; ")}`);
    const inFolders = folders.reduce((n, f) => n + (walked.each.get(f) ?? 0), 0);
    const layer = layerDir ? walked.each.get(layerDir) : container && docker ? await docker.writableSize(container) : undefined;
    return { total: inFolders + (layer ?? 0), folders: inFolders, layer };
  }

  private overMessage(t: Task, u: Usage, bound: { bytes: number; written: string }): string {
    const ref = this.d.ledger.ref(t);
    const parts = `its worktree and folders ${human(u.folders)}${u.layer === undefined ? "" : `, its container's writable layer ${human(u.layer)}`}`;
    return `task ${ref} filled ${human(u.total)} of disk (${parts}), over its bound of ${human(bound.bytes)} ([container.limits] disk = "${bound.written}"), so its turn was stopped. Remove what it does not need (its worktree is ${this.d.worktree(t)}), or raise the bound in lazy.toml ([container.limits] disk = "${suggest(u.total)}", then lazy trust); then lazy send ${ref} "…" goes on`;
  }

  /** Stop the task's turn (halt: its container stops whole) and say why; the turn then settles as waiting (turn-watch.ts). */
  private async stopTurn(t: Task, reason: string, data: Record<string, unknown>): Promise<void> {
    const w = this.watched.get(t.id) ?? { used: undefined, grown: 0, next: 0, measuring: false, stopped: false };
    this.watched.set(t.id, w);
    if (w.stopped) return;
    w.stopped = true;
    if (Tasks.byId(this.d.db, t.id)?.status !== "running") return;
    this.d.ledger.event(t, "refused", { reason, disk: data });
    this.d.log.warn(`task ${this.d.ledger.ref(t)}: ${reason}`);
    const left = await this.d.halt(t).catch((e: unknown) => `stopping its container failed: ${(e as Error).message}`);
    if (left) this.d.log.error(`task ${this.d.ledger.ref(t)}: ${left}`);
  }

  /** A turn may start: refused while the disk is low, or while the task is at or over its bound (measured now). */
  async mayStart(task: Task): Promise<void> {
    const ref = this.d.ledger.ref(task);
    const low = this.d.low();
    if (low) throw new LazyError("disk_full", `Task ${ref} cannot start a turn: ${low}.`);
    const bound = this.bound();
    if (!bound.bytes) return;
    const u = await this.measure(task);
    if (u.total < bound.bytes) return;
    throw new LazyError(
      "disk_full",
      `Task ${ref} cannot start a turn: it takes ${human(u.total)} of disk (its worktree and folders ${human(u.folders)}${u.layer === undefined ? "" : `, its container's writable layer ${human(u.layer)}`}), at or over its bound of ${human(bound.bytes)} ([container.limits] disk = "${bound.written}"). Remove what it does not need from its worktree (${this.d.worktree(task)}), or raise the bound in lazy.toml ([container.limits] disk = "${suggest(u.total)}", then lazy trust), and send again.`,
    );
  }
}

/** A bound with room above what is used: twice it, in whole GiB (or MiB under one). */
function suggest(used: number): string {
  const want = used * 2;
  return want >= 1024 ** 3 ? `${Math.ceil(want / 1024 ** 3)}g` : `${Math.max(16, Math.ceil(want / 1024 ** 2))}m`;
}
