/**
 * Where a task's files are: its folder in the state folder (home, harness, turns: mount roots
 * the agent writes below), its worktree and the git layout lazy recorded for it, its container's
 * name, and what a host session (lazy pair) works in. Git's side is git/; this file is the task's.
 */
import type { Database } from "bun:sqlite";
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import * as AgentDir from "../agent-dir";
import { Engine } from "../containers";
import * as Git from "../git";
import { isFinal, Runs, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import type { Ledger } from "./ledger";

export interface WorkspaceDeps {
  root: string;
  slug: string;
  stateDir: string;
  db: Database;
  ledger: Ledger;
}

/** What a host session (lazy pair) works on: the task's worktree, harness folder and session. */
export interface PairWorkspace {
  task: Task;
  worktree: string;
  configDir: string;
  session: string | null;
  profile: string;
  git: { dir: string; commonDir: string };
}

export class Workspaces {
  constructor(private d: WorkspaceDeps) {}

  taskDir = (t: Task) => join(this.d.stateDir, "tasks", t.id);
  worktree = (t: Task) => join(this.d.stateDir, "worktrees", this.d.ledger.ref(t));
  containerName = (t: Task) => `lazy-${this.d.slug}-${t.id}`;

  /**
   * The task's git layout from lazy's records, making the worktree on the first turn. Tasks
   * from before the record existed get the name git gives a worktree (its folder's name).
   */
  async taskGit(task: Task, agentUid: number | null): Promise<Git.TaskGit> {
    const run = Runs.get(this.d.db, task.id);
    const worktree = this.worktree(task);
    const admin = run.admin ?? Git.legacyAdmin(this.d.root, worktree);
    const g = await Git.ensureWorktree(this.d.root, worktree, this.taskDir(task), this.d.ledger.ref(task), agentUid, admin);
    const recorded = g.adminDir === Git.adminDirOf(this.taskDir(task)) ? g.adminDir : basename(g.adminDir);
    if (run.admin !== recorded) Runs.save(this.d.db, task.id, { admin: recorded });
    return g;
  }

  /** The task's git layout as recorded, touching nothing; undefined when it has none. */
  recordedGit = (task: Task): Git.TaskGit | undefined => {
    const run = Runs.get(this.d.db, task.id);
    const admin = run.admin ?? Git.legacyAdmin(this.d.root, this.worktree(task));
    return admin ? Git.layout(this.d.root, this.worktree(task), this.taskDir(task), this.d.ledger.ref(task), admin) : undefined;
  };

  /**
   * Make room for turn `turn`'s folder: the supervisor makes it inside the container; whatever
   * the agent put at that name beforehand is moved aside, and a link there refuses the turn.
   */
  clearTurnDir(task: Task, turn: number): void {
    const turns = join(this.taskDir(task), "turns");
    const st = AgentDir.lstat(turns, String(turn));
    if (!st) return;
    if (st.isDirectory()) {
      AgentDir.rename(turns, String(turn), `${turn}.stale-${Date.now()}`);
      return;
    }
    AgentDir.unlink(turns, String(turn));
    this.d.ledger.event(task, "refused", {
      reason: `turns/${turn} was a ${st.isSymbolicLink() ? "link" : "file"} the task's container made; lazy removed it without following it`,
    });
    throw new AgentDir.LinkRefused(
      join(turns, String(turn)),
      st.isSymbolicLink()
        ? "a link where the next turn's folder goes (lazy removed it; start the turn again)"
        : "a file where the next turn's folder goes (lazy removed it; start the turn again)",
    );
  }

  /** Where a host session (lazy pair) works on the task: its worktree, harness folder and session. */
  forPair(ref: string): PairWorkspace {
    const task = Tasks.resolve(this.d.db, ref);
    const name = this.d.ledger.ref(task);
    if (isFinal(task.status)) throw new LazyError("conflict", `Task ${name} is ${task.status}; its worktree is gone.`);
    // A remote engine's task works in its container's copy; the host's is not kept up to date.
    const ep = Engine.resolve();
    if (Engine.isRemote(ep))
      throw new LazyError(
        "conflict",
        `Task ${name} runs on the Docker engine at ${ep.host}, where its worktree is; the host's copy is not kept up to date, so a pair would work on stale files. Its commits are on ${Git.BRANCH_PREFIX}${name}: check that branch out yourself, or run lazy without DOCKER_HOST for a local task.`,
      );
    const worktree = this.worktree(task);
    const g = this.recordedGit(task);
    if (!g || !existsSync(worktree)) throw new LazyError("conflict", `Task ${name} has no worktree yet: lazy start ${name} makes it.`);
    // Host-side git in this folder must find the project's repository, not what the agent named.
    Git.restorePointers(g);
    const run = Runs.get(this.d.db, task.id);
    // configDir is the container's harness folder (agent-written: a pair copies transcripts from it);
    // git is what the host harness's git must use, from lazy's records, never from the worktree.
    return {
      task,
      worktree,
      configDir: join(this.taskDir(task), "harness"),
      session: run.session,
      profile: run.profile ?? task.profile,
      git: { dir: g.adminDir, commonDir: g.commonDir },
    };
  }
}
