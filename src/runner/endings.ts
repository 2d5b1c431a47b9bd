/**
 * Ending a task's session: accept (merge the task's branch with a summary from one of lazy's own
 * calls; a failed call still merges, and says why there is none), reject (the branch deleted),
 * close. Each ends the same way: the task's grants and its MCP token revoked (one registry),
 * its held turn dropped, its container removed, and only then its worktree and private folders.
 * One step failing never skips another; the daemon log names it.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { FILE as CONFIG_FILE, type Config } from "../config";
import * as Git from "../git";
import { type OwnCalls, summaryPrompt } from "../own-calls";
import type { ModelProxy } from "../proxy";
import { canMove, HeldTurns, Runs, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import { configBearing } from "./config-files";
import { deleteBranch } from "./provenance";
import type { TaskAccess } from "./task-access";
import { acceptTrailers } from "./trailers";

/**
 * Who ended a task (accept, reject, close), as the daemon knows it: the OS user the daemon runs
 * as (the only user its token's 0700 folder lets in, root aside) and the way the request came,
 * the CLI's token or the dashboard's session. Recorded on the status move; lazy export shows it.
 */
export interface Actor {
  user: string;
  uid: number;
  via: "cli" | "dashboard";
}

export interface EndingsDeps extends TaskAccess {
  slug: string;
  proxy: Pick<ModelProxy, "revokeTask">;
  calls: Pick<OwnCalls, "ask">;
  dropIdleNetwork: () => Promise<void>;
  /** The config in force now ([provenance] trailers). */
  config: () => Config;
}

export class Endings {
  constructor(private d: EndingsDeps) {}

  /**
   * Merge the task's branch into the project's branch with a summary of the work (one of lazy's
   * own model calls; when it fails, the merge still happens and says why there is none), record
   * its commits, end the session.
   */
  async accept(
    ref: string,
    opts: { withConfig?: boolean; tip?: string; by?: Actor } = {},
  ): Promise<{ task: Task; commits: string[]; summary: string | null; summaryError: string | null; config: string[] }> {
    let task = Tasks.resolve(this.d.db, ref);
    if (!canMove(task.status, "accepted"))
      throw new LazyError(
        "conflict",
        `Task ${this.d.ledger.ref(task)} is ${task.status}; only a task whose turn is done (or waiting) can be accepted.`,
      );
    const branch = `${Git.BRANCH_PREFIX}${this.d.ledger.ref(task)}`;
    // What the person reviewed (the dashboard sends the tip of the diff it showed): a branch that
    // moved since — a later turn's commits — is not merged unseen.
    if (opts.tip !== undefined) {
      const now = Git.git(this.d.root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], {
        allowFail: true,
      }).out.trim();
      if (now !== opts.tip)
        throw new LazyError(
          "conflict",
          `Task ${this.d.ledger.ref(task)}'s branch ${branch} moved since the diff you reviewed (it was at ${opts.tip.slice(0, 12)}, it is at ${now.slice(0, 12) || "nothing"}): look at the diff again, then accept.`,
        );
    }
    // lazy.toml (at any depth) decides where lazy sends the real credentials and what containers
    // may reach; harness folders, .worktreeinclude and Dockerfiles decide what runs on the host or
    // at build (config-files.ts). An agent's change to any of them is merged only when the person
    // says so, having looked.
    const bearing = configBearing(this.d.root, Git.changedFiles(this.d.root, branch));
    if (bearing.length && !opts.withConfig) {
      const names = bearing.map((f) => f.path);
      const quoted = names.map((n) => (/^[\w./@+-]+$/.test(n) ? n : `'${n.replace(/'/g, "'\\''")}'`)).join(" ");
      const root = names.includes(CONFIG_FILE);
      throw new LazyError(
        "conflict",
        `Task ${this.d.ledger.ref(task)}'s branch changes ${root ? `${CONFIG_FILE}, which decides where lazy sends your credentials and what task containers may reach (once merged, lazy uses a changed lazy.toml only after lazy trust)` : "configuration that decides where credentials go or what runs"}: ${names.join(", ")}. Look at it: git diff HEAD...${branch} -- ${quoted}; then lazy accept ${this.d.ledger.ref(task)} --with-config to merge it anyway, or lazy send ${this.d.ledger.ref(task)} "leave ${names.join(", ")} as it was".`,
        bearing.map((f) => `${f.path} — ${f.why}`),
      );
    }
    let commits: string[] = [];
    let summary: string | null = null;
    let summaryError: string | null = null;
    let merge: string | null = null;
    if (Git.git(this.d.root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { allowFail: true }).code === 0) {
      commits = Git.commitsToMerge(this.d.root, branch);
      if (commits.length) {
        // A dirty checkout or a conflict is said before lazy's own call for the summary is paid for.
        const blocked = Git.blockerMessage(this.d.ledger.ref(task), branch, Git.mergeBlockers(this.d.root, branch));
        if (blocked) throw new LazyError("conflict", blocked);
        // Read before the summary call, whose own requests are the task's too.
        const trailers = acceptTrailers(this.d.db, this.d.config(), task);
        try {
          summary = (
            await this.d.calls.ask(summaryPrompt(task, commits, Git.diffStat(this.d.root, branch)), { task, purpose: "the accept summary" })
          ).text.slice(0, 4000);
        } catch (e) {
          summaryError = (e as Error).message;
          this.d.log.warn(`task ${this.d.ledger.ref(task)}: no summary for its merge: ${summaryError}`);
        }
        Git.merge(
          this.d.root,
          branch,
          Git.withTrailers(
            `lazy: accept ${this.d.ledger.ref(task)}: ${task.title}\n\n${summary ? `${summary}\n\n` : ""}${commits.map((c) => `- ${c}`).join("\n")}\n`,
            trailers,
          ),
          this.d.ledger.ref(task),
        );
        merge = Git.head(this.d.root).commit; // what was merged stays viewable (the dashboard's diff)
      }
    }
    this.d.ledger.event(task, "summary", {
      commits,
      branch,
      ...(merge ? { merge } : {}),
      ...(summary ? { text: summary } : {}),
      ...(summaryError ? { error: summaryError } : {}),
    });
    task = this.d.ledger.move(task, "accepted", { commits: commits.length, ...(opts.by ? { by: opts.by } : {}) });
    await this.endSession(task, { deleteBranch: false });
    // With --with-config: the config-bearing files it merged, so the CLI can say what follows.
    return { task, commits, summary, summaryError, config: bearing.map((f) => f.path) };
  }

  async reject(ref: string, by?: Actor): Promise<Task> {
    let task = Tasks.resolve(this.d.db, ref);
    if (!canMove(task.status, "rejected"))
      throw new LazyError("conflict", `Task ${this.d.ledger.ref(task)} is ${task.status}; it cannot be rejected now.`);
    task = this.d.ledger.move(task, "rejected", by ? { by } : {});
    await this.endSession(task, { deleteBranch: true });
    return task;
  }

  /** `why`: what closed it when a person did not (another candidate of its group was accepted). */
  async close(ref: string, why?: string, by?: Actor): Promise<Task> {
    let task = Tasks.resolve(this.d.db, ref);
    if (!canMove(task.status, "closed"))
      throw new LazyError("conflict", `Task ${this.d.ledger.ref(task)} is ${task.status}; it cannot be closed now.`);
    task = this.d.ledger.move(task, "closed", { ...(why ? { reason: why } : {}), ...(by ? { by } : {}) });
    await this.endSession(task, { deleteBranch: false });
    return task;
  }

  /**
   * The session ended: revoke the task's secrets (its placeholders and MCP token, one registry),
   * then remove its container and worktree. One failing never skips another.
   */
  private async endSession(task: Task, opts: { deleteBranch: boolean }): Promise<void> {
    // The worktree and private folders are removed only once no container of the task is left:
    // an agent still running could swap a folder for a link in the middle of the removal.
    let containerGone = false;
    const steps: [string, () => unknown][] = [
      ["revoke the task's placeholders and MCP token", () => this.d.proxy.revokeTask(task.id)],
      ["drop its held turn", () => HeldTurns.removeTask(this.d.db, task.id)],
      [
        "remove its container",
        async () => {
          const run = Runs.get(this.d.db, task.id);
          const docker = await this.d.docker();
          if (run.container_id) await docker.remove(run.container_id);
          for (const c of await docker.list(this.d.slug)) if (c.taskId === task.id) await docker.remove(c.id);
          if ((await docker.list(this.d.slug)).some((c) => c.taskId === task.id)) throw new Error("a container of the task is still there");
          containerGone = true;
        },
      ],
      ["remove the project's network if no task uses it", () => this.d.dropIdleNetwork()],
      [
        "remove its worktree",
        () => {
          if (!containerGone)
            throw new Error(
              "its container could not be removed, so its worktree stays; remove the container (docker rm -f) and close again",
            );
          const g = this.d.recordedGit(task);
          if (g) Git.removeWorktree(this.d.root, g, this.d.taskDir(task));
        },
      ],
      [
        "remove its private folders",
        () => {
          if (!containerGone) throw new Error("its container could not be removed");
          rmSync(join(this.d.taskDir(task), "git"), { recursive: true, force: true });
        },
      ],
      ...(opts.deleteBranch
        ? ([
            [
              "delete its branch and the trace records of the work only it held",
              () => deleteBranch(this.d, this.d.ledger.ref(task), `${Git.BRANCH_PREFIX}${this.d.ledger.ref(task)}`),
            ],
          ] as [string, () => unknown][])
        : []),
    ];
    for (const [what, step] of steps) {
      try {
        await step();
      } catch (e) {
        this.d.log.error(`task ${this.d.ledger.ref(task)}: could not ${what}: ${(e as Error).message}`);
      }
    }
  }
}
