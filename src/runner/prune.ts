/**
 * `lazy prune`: what lazy left on this machine that nothing will use again. The stopped
 * containers of ended tasks (accepted, rejected, closed: store/status.ts isFinal) and of tasks
 * the store does not know, and lazy's own calls' stopped ones; the worktrees and state folders
 * of ended tasks; and the images lazy built for this project that no container uses and the
 * config no longer names. A task that can still run or be reviewed (queued, running, done, waiting, failed) is
 * never touched, nor is anything running, nor a container or image without lazy's labels.
 * Housekeeping (reconcile.ts) removes ended tasks' containers too, in time; prune does it now,
 * with the rest, and says what it freed. `dryRun` lists the same without removing anything.
 *
 * Paths come from lazy's records and its state layout, never from anything a task wrote: a
 * worktree or state folder that is a link is unlinked, never followed; removal (rm -rf's rules)
 * and measuring (du -x) never follow a link inside either.
 */
import { lstatSync, rmSync, unlinkSync } from "node:fs";
import type { Runtime } from "../containers";
import { walk } from "../disk";
import * as Git from "../git";
import type { OwnCalls } from "../own-calls";
import { isFinal, type Task, Tasks } from "../store";
import type { Lifecycle } from "./task-access";

export interface PruneDeps extends Lifecycle {
  root: string;
  docker: () => Promise<Runtime>;
  calls: Pick<OwnCalls, "isCall" | "active">;
  taskDir: (task: Task) => string;
  worktree: (task: Task) => string;
  dropIdleNetwork: () => Promise<void>;
}

/** One thing prune removes (or would), with the bytes it takes. */
export interface Pruned {
  kind: "container" | "image" | "worktree" | "folder";
  /** What people know it by: a container's name, an image's tag, a path. */
  name: string;
  /** The task it belonged to (its code or id), when it had one. */
  task: string | null;
  bytes: number;
}

export interface PruneResult {
  dryRun: boolean;
  removed: Pruned[];
  /** What was to go but could not, and why. */
  failed: (Pruned & { error: string })[];
  /** Bytes freed (or, on a dry run, that would be). */
  bytes: number;
  /** Tasks that can still run or be reviewed: nothing of theirs was looked at. */
  live: number;
}

const exists = (path: string) => {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
};

export class Pruner {
  constructor(private d: PruneDeps) {}

  async prune(opts: { dryRun: boolean }): Promise<PruneResult> {
    const removed: Pruned[] = [];
    const failed: PruneResult["failed"] = [];
    const tasks = new Map(Tasks.list(this.d.db).map((t) => [t.id, t]));
    const ended = [...tasks.values()].filter((t) => isFinal(t.status));
    const ref = (t: Task | undefined) => (t ? this.d.ledger.ref(t) : null);
    let docker: Runtime | undefined;
    try {
      docker = await this.d.docker();
    } catch {
      docker = undefined; // no engine: the folders still go; doctor says why the engine is not there
    }

    // Containers: stopped ones of ended or unknown tasks, and lazy's own calls no call holds.
    const left = new Set<string>(); // tasks that still have a container after this step
    if (docker) {
      for (const c of await docker.listSized(this.d.slug)) {
        const task = c.taskId ? tasks.get(c.taskId) : undefined;
        const call = this.d.calls.isCall(c.name);
        const ours = call ? !this.d.calls.active.has(c.name) : !task || isFinal(task.status);
        const keep = c.running || !ours || (task && this.d.starting.has(task.id));
        if (keep) {
          if (c.taskId) left.add(c.taskId);
          continue;
        }
        const item: Pruned = { kind: "container", name: c.name, task: ref(task) ?? c.taskId, bytes: c.bytes };
        if (opts.dryRun) {
          removed.push(item);
          continue;
        }
        // Never forced: a container that started meanwhile is refused by the engine itself.
        const error = await docker.removeStopped(c.id);
        if (error) {
          failed.push({ ...item, error });
          if (c.taskId) left.add(c.taskId);
        } else removed.push(item);
      }
    }

    // Worktrees and state folders of ended tasks whose containers are gone (a container could
    // still write there: endings.ts's rule).
    const paths: { task: Task; kind: Pruned["kind"]; path: string }[] = [];
    for (const t of ended) {
      if (left.has(t.id)) continue;
      for (const [kind, path] of [
        ["worktree", this.d.worktree(t)],
        ["folder", this.d.taskDir(t)],
      ] as const)
        if (exists(path)) paths.push({ task: t, kind, path });
    }
    const sizes = paths.length ? (await walk(paths.map((p) => p.path))).each : new Map<string, number>();
    for (const p of paths) {
      const item: Pruned = { kind: p.kind, name: p.path, task: ref(p.task), bytes: sizes.get(p.path) ?? 0 };
      if (opts.dryRun) {
        removed.push(item);
        continue;
      }
      try {
        if (p.kind === "worktree") this.removeWorktree(p.path);
        else this.removeFolder(p.path);
        removed.push(item);
      } catch (e) {
        failed.push({ ...item, error: (e as Error).message });
      }
    }

    // Images lazy built for this project that no container uses (any project's, lazy's or not:
    // the engine's own list) and that its config does not name now. Another project that names
    // the same default image and has no container of it builds it again at its next launch.
    if (docker) {
      const inUse = await docker.imagesInUse();
      const keep = this.d.project.keptImages(this.d.config());
      for (const image of await docker.lazyImages(this.d.slug)) {
        if (inUse.has(image.id) || image.tags.some((t) => keep.has(t))) continue;
        // One with no tag left is an older build a rebuild under the same tag replaced.
        const refs = image.tags.length ? image.tags : [image.id];
        const item: Pruned = {
          kind: "image",
          name: image.tags.length ? image.tags.join(", ") : image.id.slice(0, 19),
          task: null,
          bytes: image.bytes,
        };
        if (opts.dryRun) {
          removed.push(item);
          continue;
        }
        const errors = (await Promise.all(refs.map((t) => docker.removeImage(t)))).filter((e): e is string => !!e);
        if (errors.length) failed.push({ ...item, error: errors[0]! });
        else removed.push(item);
      }
      if (!opts.dryRun && removed.some((r) => r.kind === "container"))
        await this.d
          .dropIdleNetwork()
          .catch((e) => this.d.log.warn(`could not remove the project's idle network: ${(e as Error).message}`));
    }

    for (const r of opts.dryRun ? [] : removed) this.d.log.info(`prune: removed ${r.kind} ${r.name}${r.task ? ` (task ${r.task})` : ""}`);
    for (const f of failed) this.d.log.warn(`prune: could not remove ${f.kind} ${f.name}: ${f.error}`);
    return {
      dryRun: opts.dryRun,
      removed,
      failed,
      bytes: removed.reduce((n, r) => n + r.bytes, 0),
      live: tasks.size - ended.length,
    };
  }

  /**
   * The task's worktree at the path lazy's layout gives it: a link there is unlinked, never
   * followed; a folder goes with rm -rf's rules (links inside are removed, not followed). Git
   * forgets a worktree whose folder is gone (`git worktree prune`, in the project root); nothing
   * inside the worktree is read or written first (its .git file is the agent's).
   */
  private removeWorktree(path: string): void {
    if (exists(path)?.isSymbolicLink()) unlinkSync(path);
    else rmSync(path, { recursive: true, force: true });
    Git.git(this.d.root, ["worktree", "prune"], { allowFail: true });
  }

  private removeFolder(path: string): void {
    if (exists(path)?.isSymbolicLink()) unlinkSync(path);
    else rmSync(path, { recursive: true, force: true });
  }
}
