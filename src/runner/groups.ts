/**
 * Best-of-N: one prompt run by several candidates (profiles, or N tasks on one profile), each an
 * ordinary task with its own container, worktree, branch, budget and usage pause, made together
 * as a group (tasks.grp). Here: making a group (every profile checked before anything is made),
 * the project's check command run on a candidate ([review] check), and which candidates an
 * accept closes. The comparison a person reads is dashboard/compare.ts.
 *
 * The check runs code from the candidate's worktree, so never on the host: in a fresh container
 * of the task image (not the agent's own container, whose disk the agent could have doctored:
 * a `bun` of its own on PATH), with the candidate's worktree and git folders only, the task
 * image's limits, the project's fenced network, no grant and no credential, and it is removed
 * after. The command comes from the trusted config only (config/trust.ts: a changed [review]
 * check is refused until lazy trust). Its verdict is lazy's own event (`check`), with the tip
 * it judged: a verdict about an older tip is not shown as the candidate's.
 */
import type { Database } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { type Config, resolveLimits, resolveProfile } from "../config";
import { BIN, containerEnvOf, Image, type ProjectContainers, taskMounts } from "../containers";
import * as Git from "../git";
import { isFinal, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import type { Ledger } from "./ledger";

/** At most this many candidates a group (each is a container). */
export const MAX_CANDIDATES = 8;
/** A check that runs longer is stopped and fails. */
export const CHECK_TIMEOUT_MS = 10 * 60_000;
/** The tail of the check's output kept in its event. */
const CHECK_OUTPUT = 4000;

export interface NewGroup {
  prompt: string;
  /** One profile per candidate (a profile may repeat: --n 3 on one profile). */
  profiles: string[];
  /** The group's code (its candidates are CODE-<profile> or CODE-<n>); made up when absent. */
  code?: string;
  title?: string;
}

export interface GroupsDeps {
  root: string;
  slug: string;
  db: Database;
  log: Logger;
  config: () => Config;
  /** The project's engine, image and network, shared with turns and own calls (containers/project.ts). */
  project: Pick<ProjectContainers, "docker" | "image" | "gateway" | "netEnv" | "hostCa">;
  ledger: Ledger;
  taskDir: (t: Task) => string;
  recordedGit: (t: Task) => Git.TaskGit | undefined;
  /** Run `fn` with the task marked as starting: no turn starts, housekeeping leaves its containers alone. */
  busy: <T>(task: Task, fn: () => Promise<T>) => Promise<T>;
}

export class Groups {
  constructor(private d: GroupsDeps) {}

  /** The candidates, made in one transaction once every profile is known; nothing is made otherwise. */
  add(input: NewGroup): { group: string; tasks: Task[] } {
    if (!input.prompt.trim()) throw new LazyError("invalid_input", 'A group needs a prompt: lazy run --profiles a,b "what to do".');
    if (input.profiles.length < 2)
      throw new LazyError("invalid_input", "Best-of-N needs at least two candidates: --profiles a,b or --n 2 (or more).");
    if (input.profiles.length > MAX_CANDIDATES)
      throw new LazyError("invalid_input", `At most ${MAX_CANDIDATES} candidates a group; ${input.profiles.length} were asked for.`);
    const config = this.d.config();
    for (const p of input.profiles) resolveProfile(config, p); // an unknown one is refused, naming it and the known ones
    const group = input.code ?? `bo-${randomBytes(3).toString("hex")}`;
    Tasks.validateCode(group);
    if (Tasks.inGroup(this.d.db, group).length)
      throw new LazyError("conflict", `A group with code "${group}" already exists; pick another code.`);
    const distinct = new Set(input.profiles).size === input.profiles.length;
    const codes = input.profiles.map((p, i) => (distinct && `${group}-${p}`.length <= 48 ? `${group}-${p}` : `${group}-${i + 1}`));
    for (const c of codes)
      if (c.length > 48)
        throw new LazyError("invalid_input", `The group code "${group}" is too long for its candidates' codes; shorten it.`);
    const tasks = Tasks.addMany(
      this.d.db,
      input.profiles.map((profile, i) => ({ prompt: input.prompt, title: input.title, code: codes[i], profile, group })),
    );
    return { group, tasks };
  }

  /** The group's candidates; refused (naming why) when `code` is no group. */
  members(code: string): Task[] {
    const tasks = Tasks.inGroup(this.d.db, code.trim());
    if (tasks.length) return tasks;
    let task: Task | undefined;
    try {
      task = Tasks.resolve(this.d.db, code);
    } catch {}
    if (task?.group)
      throw new LazyError(
        "not_found",
        `"${code}" is a task, not a group: it is a candidate of group ${task.group} (lazy compare ${task.group}).`,
      );
    if (task) throw new LazyError("not_found", `"${code}" is a task, not a group: lazy run --profiles a,b "…" makes a group.`);
    throw new LazyError(
      "not_found",
      `No group "${code}": lazy run --profiles a,b "…" makes one; lazy task show names a candidate's group.`,
    );
  }

  /** The other candidates an accept of `task` closes (those whose session has not ended). */
  others(task: Task): Task[] {
    if (!task.group) return [];
    return Tasks.inGroup(this.d.db, task.group).filter((t) => t.id !== task.id && !isFinal(t.status));
  }

  /**
   * Run [review] check on each candidate whose turn has ended and whose tip has no verdict yet
   * (`force`: again). What each got: its verdict, or why none.
   */
  async checkAll(code: string, force = false): Promise<{ task: string; ran: boolean; why?: string }[]> {
    const members = this.members(code);
    const out: { task: string; ran: boolean; why?: string }[] = [];
    // One at a time: checks are builds and test runs, and the machine is shared with the agents.
    for (const t of members) {
      try {
        const why = await this.check(t, force);
        out.push({ task: this.d.ledger.ref(t), ran: !why, ...(why ? { why } : {}) });
      } catch (e) {
        out.push({ task: this.d.ledger.ref(t), ran: false, why: (e as Error).message });
      }
    }
    return out;
  }

  /** Check one candidate; undefined when it ran, else why it did not. */
  private async check(task: Task, force: boolean): Promise<string | undefined> {
    const config = this.d.config();
    const command = config.review.check;
    if (!command) return "lazy.toml names no [review] check";
    if (task.status === "running" || task.status === "queued") return `it is ${task.status}`;
    // An ended session's worktree is gone (a verdict from before its end stays shown).
    if (isFinal(task.status)) return `it is ${task.status}: its worktree is gone`;
    const branch = `${Git.BRANCH_PREFIX}${this.d.ledger.ref(task)}`;
    const tip = (
      await Git.gitAsync(this.d.root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], { allowFail: true })
    ).out.trim();
    if (!tip) return `it has no branch ${branch}`;
    const last = Tasks.lastEvent(this.d.db, task.id, "check")?.data;
    if (!force && last?.tip === tip && last.command === command) return undefined; // this tip was judged by this command
    const g = this.d.recordedGit(task);
    // Docker would make a missing bind source as an empty folder: no worktree, no check.
    if (!g || !existsSync(g.worktree)) return "it has no worktree";
    return this.d.busy(task, async () => {
      const docker = await this.d.project.docker();
      const image = await this.d.project.image(docker, config);
      const { net } = await this.d.project.gateway(docker, config);
      Git.restorePointers(g);
      const uid = Image.agentUid();
      const tdir = this.d.taskDir(task);
      const started = Date.now();
      const env = { ...(await containerEnvOf(this.d.root)), ...this.d.project.netEnv() };
      const id = await docker.create({
        name: `lazy-${this.d.slug}-${task.id}-check-${randomBytes(3).toString("hex")}`,
        image: image.tag,
        project: this.d.slug,
        root: this.d.root,
        taskId: task.id,
        user: `${uid}:${uid}`,
        env,
        // Its worktree and git folders and a home; not the harness folder or the turns (nothing runs the agent here).
        mounts: taskMounts(this.d.root, g, tdir, this.d.project.hostCa(config)).filter(
          (m) => m.container !== "/lazy/harness" && m.container !== "/lazy/turns",
        ),
        network: net.name,
        hostGateway: docker.kind === "desktop",
        cmd: [BIN, "supervise", "--idle"],
        limits: resolveLimits(config.container.limits),
      });
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void docker.remove(id); // the exec's stream ends with its container
      }, CHECK_TIMEOUT_MS);
      let r: { code: number; output: string };
      try {
        r = await docker.exec(id, ["sh", "-c", command], `${uid}:${uid}`, env, g.worktree);
      } catch (e) {
        r = { code: -1, output: (e as Error).message };
      } finally {
        clearTimeout(timer);
        await docker.remove(id);
      }
      const ok = r.code === 0 && !timedOut;
      this.d.ledger.event(task, "check", {
        command,
        tip,
        ok,
        code: r.code,
        ms: Date.now() - started,
        ...(timedOut ? { error: `stopped after ${CHECK_TIMEOUT_MS / 60_000} minutes` } : {}),
        output: r.output.slice(-CHECK_OUTPUT),
      });
      this.d.log.info(`task ${this.d.ledger.ref(task)}: [review] check ${ok ? "passed" : `failed (exit ${r.code})`}`);
      return undefined;
    });
  }
}
