/**
 * Best-of-N: one prompt run by several candidates (profiles, or N tasks on one profile), each an
 * ordinary task with its own container, worktree, branch, budget and usage pause, made together
 * as a group (tasks.grp). Here: making a group (every profile checked before anything is made),
 * the project's check command run on a candidate ([review] check), and which candidates an
 * accept closes. The comparison a person reads is comparison.ts.
 *
 * The check judges what `lazy accept` would merge: the files of the candidate's tip as
 * committed (git/snapshot.ts), never its worktree (an uncommitted file there is the agent's
 * choice, not the branch's). It runs code from the candidate, so never on the host: in a fresh
 * container of the task image (not the agent's own container, whose disk the agent could have
 * doctored: a `bun` of its own on PATH), the tip's files unpacked onto that container's own
 * disk with a home of its own (no dotfile of the agent's), the task image's limits, the
 * project's fenced network, no grant and no credential, and it is removed after, files and all. The command comes from the trusted config only (config/trust.ts: a changed [review]
 * check is refused until lazy trust). Its verdict is lazy's own event (`check`), with the tip
 * it judged: a verdict about an older tip is not shown as the candidate's.
 */
import type { Database } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { type Config, resolveLimits, resolveProfile } from "../config";
import { BIN, caMount, containerEnvOf, Image, linuxBinary, type ProjectContainers, Tar } from "../containers";
import * as Git from "../git";
import { GroupChecks, isFinal, type Task, Tasks } from "../store";
import { readRegularBytes } from "../util/bounded-read";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";

/** What a group needs of the runner's ledger: a task's ref, and its events (runner/ledger.ts). */
export interface GroupLedger {
  ref(task: Task): string;
  event(task: Task, kind: string, data: unknown): void;
}

/** At most this many candidates a group (each is a container). */
export const MAX_CANDIDATES = 8;
/** A check that runs longer is stopped and fails. */
export const CHECK_TIMEOUT_MS = 10 * 60_000;
/** Where the check runs, in its container: the tip's files, on the container's own disk. */
export const CHECKOUT = "/lazy/check";
/** The tip's files a check copies, at most (bytes, all together; files). */
export const CHECK_TREE_BYTES = 512 * 1024 * 1024;
export const CHECK_TREE_FILES = 200_000;
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
  ledger: GroupLedger;
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
    const v = await this.judge(task, "check", tip, command);
    this.verdict(task, v);
    return undefined;
  }

  /**
   * Run [review] check once on the group's untouched base (where its candidates forked from), the
   * same way as on a candidate: a check that passes there does not tell candidates apart, and is
   * no candidate's pass. Kept with the group (store/group-checks.ts); undefined when it ran (or
   * its verdict on this base and command stands), else why it did not.
   */
  async checkBase(code: string, force = false): Promise<string | undefined> {
    const members = this.members(code);
    const group = members[0]!.group!;
    const command = this.d.config().review.check;
    if (!command) return "lazy.toml names no [review] check";
    const base = await this.base(members);
    if (!base) return "no candidate has a branch yet";
    const last = GroupChecks.get(this.d.db, group);
    if (!force && last?.base === base && last.command === command) return undefined;
    // A candidate whose turn has ended holds the check's container (its labels; no turn of it starts meanwhile).
    const holder = members.find((t) => t.status !== "running" && t.status !== "queued");
    if (!holder) return "no candidate's turn has ended yet";
    const v = await this.judge(holder, "base-check", base, command);
    GroupChecks.put(this.d.db, group, { base, command, ok: v.ok, code: v.code, ms: v.ms, output: v.output, error: v.error ?? null });
    this.d.log.info(
      `group ${group}: [review] check ${v.ok ? "passed" : `failed (${v.error ?? `exit ${v.code}`})`} on the base ${base.slice(0, 12)}`,
    );
    return undefined;
  }

  /** Where the candidates forked from: the common ancestor of their branches and the project's HEAD; null when no branch. */
  async base(members: readonly Task[]): Promise<string | null> {
    const tips: string[] = [];
    for (const t of members) {
      const r = await Git.gitAsync(
        this.d.root,
        ["rev-parse", "--verify", "--quiet", `refs/heads/${Git.BRANCH_PREFIX}${this.d.ledger.ref(t)}^{commit}`],
        { allowFail: true },
      );
      const tip = r.out.trim();
      if (/^[0-9a-f]{40,64}$/.test(tip)) tips.push(tip);
    }
    if (!tips.length) return null;
    const r = await Git.gitAsync(this.d.root, ["merge-base", "--octopus", "HEAD", ...tips], { allowFail: true });
    const base = r.out.trim();
    return /^[0-9a-f]{40,64}$/.test(base) ? base : null;
  }

  /**
   * Run `command` on the files of commit `tip` in a fresh container of the task image (never the
   * agent's own, never the host), held under `task` (its labels; no turn starts meanwhile).
   */
  private judge(
    task: Task,
    what: string,
    tip: string,
    command: string,
  ): Promise<{ command: string; tip: string; ok: boolean; code: number; ms: number; error?: string; output: string }> {
    const config = this.d.config();
    return this.d.busy(task, async () => {
      const docker = await this.d.project.docker();
      const image = await this.d.project.image(docker, config);
      const { net } = await this.d.project.gateway(docker, config);
      const uid = Image.agentUid();
      const started = Date.now();
      const env = { ...(await containerEnvOf(this.d.root)), ...this.d.project.netEnv() };
      let files: Tar.Entry[];
      try {
        files = await this.checkout(tip, uid);
      } catch (e) {
        if (!(e instanceof LazyError)) throw e;
        // A tip git would not check out, or past the bound, cannot pass: its verdict says why.
        return { command, tip, ok: false, code: -1, ms: Date.now() - started, error: e.message, output: "" };
      }
      const id = await docker.create(
        {
          name: `lazy-${this.d.slug}-${task.id}-${what}-${randomBytes(3).toString("hex")}`,
          image: image.tag,
          project: this.d.slug,
          root: this.d.root,
          taskId: task.id,
          user: `${uid}:${uid}`,
          env,
          // lazy's binary and the host's CA only: the files it judges go into the container's own disk, gone with it.
          mounts: [{ host: linuxBinary(), container: BIN, readOnly: true }, ...caMount(this.d.project.hostCa(config))],
          network: net.name,
          hostGateway: docker.kind === "desktop",
          cmd: [BIN, "supervise", "--idle"],
          limits: resolveLimits(config.container.limits),
        },
        { start: false },
      );
      try {
        await docker.files.putArchive(id, "/", Tar.write(files));
        await docker.start(id);
      } catch (e) {
        await docker.remove(id);
        throw e;
      }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void docker.remove(id); // the exec's stream ends with its container
      }, CHECK_TIMEOUT_MS);
      let r: { code: number; output: string };
      try {
        r = await docker.exec(id, ["sh", "-c", command], `${uid}:${uid}`, env, CHECKOUT);
      } catch (e) {
        r = { code: -1, output: (e as Error).message };
      } finally {
        clearTimeout(timer);
        await docker.remove(id);
      }
      const ok = r.code === 0 && !timedOut;
      return {
        command,
        tip,
        ok,
        code: r.code,
        ms: Date.now() - started,
        ...(timedOut ? { error: `stopped after ${CHECK_TIMEOUT_MS / 60_000} minutes` } : {}),
        output: r.output.slice(-CHECK_OUTPUT),
      };
    });
  }

  /** The check's verdict: lazy's own event, with the tip it judged. */
  private verdict(
    task: Task,
    v: { command: string; tip: string; ok: boolean; code: number; ms: number; error?: string; output: string },
  ): undefined {
    this.d.ledger.event(task, "check", v);
    this.d.log.info(
      `task ${this.d.ledger.ref(task)}: [review] check ${v.ok ? "passed" : `failed (${v.error ?? `exit ${v.code}`})`} on ${v.tip.slice(0, 12)}`,
    );
    return undefined;
  }

  /**
   * What the check runs in, as one tar for the container's own disk: the tip's files exactly as
   * committed (git/snapshot.ts: not the worktree, whose uncommitted files the agent chose; no
   * filter or attribute applied), the checkout's .worktreeinclude files as a new task's worktree
   * gets them, and a home of its own (not the task's, whose dotfiles the agent wrote).
   */
  private async checkout(tip: string, uid: number): Promise<Tar.Entry[]> {
    const files = await Git.snapshot(this.d.root, tip, { bytes: CHECK_TREE_BYTES, files: CHECK_TREE_FILES });
    const out: Tar.Entry[] = [
      { name: "/lazy", type: "dir", mode: 0o755, uid: 0 },
      { name: "/lazy/home", type: "dir", mode: 0o700, uid },
      { name: CHECKOUT, type: "dir", mode: 0o755, uid },
    ];
    for (const f of files)
      out.push({
        name: join(CHECKOUT, f.path),
        type: f.type,
        mode: f.mode,
        uid,
        ...(f.type === "link" ? { target: Buffer.from(f.data!).toString("utf8") } : f.type === "file" ? { data: f.data } : {}),
      });
    const leaves = new Set(files.filter((f) => f.type !== "dir").map((f) => f.path));
    const dirs = new Set(files.filter((f) => f.type === "dir").map((f) => f.path));
    let bytes = files.reduce((n, f) => n + (f.data?.length ?? 0), 0);
    for (const rel of await Git.included(this.d.root)) {
      const parts = rel.split("/");
      const above = parts.slice(0, -1).map((_, i) => parts.slice(0, i + 1).join("/"));
      // A committed file of that name (or in its way) is what would be merged: it stays.
      if (leaves.has(rel) || dirs.has(rel) || above.some((d) => leaves.has(d))) continue;
      const r = readRegularBytes(join(this.d.root, rel), CHECK_TREE_BYTES - bytes);
      if (!("bytes" in r)) continue;
      bytes += r.bytes.length;
      for (const d of above.filter((d) => !dirs.has(d))) {
        out.push({ name: join(CHECKOUT, d), type: "dir", mode: 0o755, uid });
        dirs.add(d);
      }
      out.push({ name: join(CHECKOUT, rel), type: "file", mode: r.mode & 0o111 ? 0o755 : 0o644, uid, data: r.bytes });
    }
    return out;
  }
}
