/**
 * lazy's own model calls: one prompt, one answer, in a throwaway container launched the way an
 * agent turn is (the task image, the project network, lazy's supervisor, the harness of the
 * profile `[models.roles] agent` names), so the real credential reaches it only as a
 * placeholder and the call is audited like any other. Used by `lazy accept` (the summary),
 * `lazy ask`, `lazy report` and memory compaction.
 *
 * Grants (docs: "Lifetime"): a call about a task shares that task's grant when the task runs the
 * same profile, and otherwise gets its own, attributed to the task and revoked with it; a call
 * about no task shares one grant per project (role `lazy`). The grant is pinned to the call's
 * container while it runs, next to the task container's own address, never instead of it.
 *
 * Warm: once the project has made a call about no task, lazy keeps one container ready for the
 * next (made, started, pinned; the harness started too where it can take its prompt on stdin,
 * waiting for it), for SPARE_IDLE_MS. A call about no task takes it when it still fits (same
 * image, network, profile and placeholder) and a fresh one is made behind it; anything else is
 * made on demand (always, with LAZY_WARM_CALLS=0 in the daemon's environment). Either way, one container per call, removed after it. Own calls carry what
 * they need in their prompt: the harness adds no project state of its own (a warm one's would be
 * stale), and loads nothing of the checkout's harness configuration (.claude/settings.json hooks,
 * .mcp.json, Pi extensions, Codex's project layer): agents' branches are merged there.
 *
 * The project a call reads is its committed tree at HEAD, in a volume of the call's own,
 * read-only at the project's path, on any engine: never the checkout itself (its git-ignored
 * .env, untracked files and uncommitted edits: the prompt names those, never their contents).
 * The tree's volume goes with the container; a warm container whose HEAD is no longer the
 * project's is made anew. On a remote engine (DOCKER_HOST=tcp://…) nothing of this host is
 * mounted: lazy's binary comes from the volume remote tasks use, its folders and harness files
 * are shipped in, and its turn folder is mirrored back as a remote task's is
 * (remote/ship.ts). No warm container is kept there.
 */

import { randomBytes } from "node:crypto";
import { lchownSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as AgentDir from "../agent-dir";
import { defaultProfile, type ResolvedProfile, resolveLimits, resolveProfile } from "../config";
import { BIN, containerEnvOf, Image, linuxBinary, type Runtime } from "../containers";
import * as Git from "../git";
import * as Harness from "../harness";
import type { Task } from "../store";
import { FILES } from "../supervisor";
import { LazyError } from "../util/errors";
import type { Answer, OwnCallDeps } from "./deps";
import * as Outcome from "./outcome";

/** How long a warm container waits for a call before it is removed. */
export const SPARE_IDLE_MS = 10 * 60_000;
/** Where a warm harness's prompt lands (relative to the call's turns folder); the supervisor waits for it. */
const STDIN_FILE = "prompt.in";

/** What a call runs on, settled before any container: the profile, its grant, image and network. */
interface Plan {
  docker: Runtime;
  profile: ResolvedProfile;
  launch: { envVar: string; placeholder: string };
  image: string;
  net: string;
  proxyUrl: string;
  /** A warm container fits a call when this is the same. */
  key: string;
}

/** One call's container and folder, made for one call and removed after it. */
interface Vessel {
  name: string;
  dir: string;
  container: string;
  /** The container's address (where the engine lets lazy pin). */
  ip?: string;
  /** Whether the grant accepts `ip` now: a call's container from its start, the warm one only once a call takes it. */
  pinned?: boolean;
  placeholder: string;
  key: string;
  /** The harness already started, waiting for its prompt on stdin (supervise --stdin). */
  exec?: string;
  /** The volume holding the project's committed tree, removed with the container. */
  tree?: string;
  /** A remote engine: the turn folder's mirror, while the call runs. */
  mirror?: { going: boolean; done: Promise<void> };
}

export class OwnCalls {
  /** Containers of calls in flight, and the warm one: housekeeping leaves them alone (and their network). */
  readonly active = new Set<string>();
  private spare: { vessel: Vessel; expires: Timer } | undefined;
  private filling: Promise<void> | undefined;
  /** Removals under way (a stale or idle warm container): close() waits for them too. */
  private removing = new Set<Promise<void>>();
  private closed = false;
  /** Calls from their first step (the plan ensures the network) to their last. */
  private asking = 0;
  /** The containers of calls in flight, and each call's end: close() removes them and waits. */
  private inFlight = new Map<Vessel, { docker: Runtime; ended: Promise<unknown> }>();

  constructor(private d: OwnCallDeps) {}

  /** Whether a container is one of lazy's own calls (in flight or left by a daemon that died). */
  isCall(name: string): boolean {
    return name.startsWith(`lazy-${this.d.slug}-call-`);
  }

  /**
   * Ask the model one thing. `task` attributes the call (and its grant) to that task. Fails
   * loudly (a LazyError naming the cause); the caller decides what a failure means.
   */
  async ask(prompt: string, opts: { task?: Task; purpose: string }): Promise<Answer> {
    this.asking++;
    try {
      return await this.call(prompt, opts);
    } finally {
      this.asking--;
    }
  }

  /**
   * Whether a call is under way or being set up, or the warm container is being made or waits:
   * the project's network must stay (housekeeping drops it only when nothing uses it).
   */
  get busy(): boolean {
    return this.asking > 0 || this.filling !== undefined || this.active.size > 0;
  }

  private async call(prompt: string, opts: { task?: Task; purpose: string }): Promise<Answer> {
    // A call about a task makes the task's grant redeem while it runs (proxy `hold`), not after.
    const holder = `call:${randomBytes(6).toString("hex")}`;
    if (opts.task) await this.d.proxy.hold(opts.task.id, holder);
    try {
      return await this.callIn(prompt, opts);
    } finally {
      if (opts.task) this.d.proxy.release(opts.task.id, holder);
    }
  }

  private async callIn(prompt: string, opts: { task?: Task; purpose: string }): Promise<Answer> {
    const plan = await this.plan(opts.task);
    const { profile } = plan;
    let vessel = opts.task ? undefined : await this.takeSpare(plan);
    // The next call about no task finds one ready (made while this one runs).
    if (!opts.task) this.keepWarm(plan);
    let ended = () => {};
    try {
      if (vessel) await this.pin(vessel);
      vessel ??= await this.vessel(plan, false);
      this.inFlight.set(vessel, { docker: plan.docker, ended: new Promise<void>((resolve) => (ended = resolve)) });
      if (this.closed) throw new LazyError("daemon_unavailable", "lazy's daemon is stopping.");
      const turns = join(vessel.dir, "turns");
      let exec = vessel.exec;
      const stdin = exec ? Harness.stdinPrompt(profile.harness, prompt) : undefined;
      if (exec && stdin !== undefined) AgentDir.write(turns, STDIN_FILE, stdin, { uid: this.owner() });
      else exec = await this.start(plan, vessel, { prompt });
      if (plan.docker.remote) {
        const m = { going: true, done: Promise.resolve() };
        m.done = this.d.remote.mirror(plan.docker, vessel.container, turns, () => m.going, this.owner());
        vessel.mirror = m;
      }
      const { container } = vessel;
      const exit = await Outcome.waitFor(plan.docker, exec, vessel, (docker) => this.d.remote.pull(docker, container, turns, this.owner()));
      const text = Outcome.answerOf(turns, profile.harness);
      if (exit.code !== 0 || !text)
        throw new LazyError(
          "launch_refused",
          `lazy's own model call (${opts.purpose}, profile ${profile.name}) failed: ${exit.error ?? (text ? `exit code ${exit.code}` : "the model gave no answer")}; lazy stats audit shows the call.`,
        );
      return { text, profile: profile.name };
    } catch (e) {
      // Its container went with the daemon's stop (close()), not with someone outside lazy.
      if (this.closed)
        throw new LazyError(
          "daemon_unavailable",
          `lazy's daemon stopped during the call (${opts.purpose}); nothing was answered. Ask again.`,
        );
      throw e;
    } finally {
      if (vessel) {
        await this.discard(plan.docker, vessel);
        this.inFlight.delete(vessel);
      }
      ended();
    }
  }

  /**
   * Remove the folders of calls whose containers are gone and that are not this daemon's (a
   * daemon killed mid-call, or with a warm container, left them). `existing`: the names of the
   * project's containers still there, so no folder goes while a container can write it.
   */
  sweep(existing: ReadonlySet<string>): void {
    const calls = join(this.d.stateDir, "calls");
    let ids: string[];
    try {
      ids = readdirSync(calls);
    } catch {
      return; // no call yet
    }
    for (const id of ids) {
      const name = `lazy-${this.d.slug}-call-${id}`;
      if (this.active.has(name) || existing.has(name)) continue;
      rmSync(join(calls, id), { recursive: true, force: true });
      // The project's tree it was given (named as the container).
      void this.d.project
        .docker()
        .then((docker) => this.d.remote.removeVolume(docker, name))
        .catch((e: unknown) => this.d.log.warn(`removing the volume of call ${name}: ${(e as Error).message}`));
    }
  }

  /**
   * The daemon stops: remove the warm container and the containers of calls in flight (each
   * call then fails, naming its container, and cleans up after itself), and wait for both.
   */
  async close(): Promise<void> {
    this.closed = true;
    const calls = [...this.inFlight];
    await Promise.all(calls.map(([v, c]) => c.docker.remove(v.container)));
    await Promise.all(calls.map(([, c]) => c.ended));
    await this.filling;
    const spare = this.spare;
    this.spare = undefined;
    if (spare) {
      clearTimeout(spare.expires);
      this.removeLater(await this.d.project.docker(), spare.vessel, "the warm call container");
    }
    await Promise.all(this.removing);
  }

  /** Remove a call container in the background (close() waits for it), logging what failed. */
  private removeLater(docker: Runtime, v: Vessel, what: string): void {
    const p = this.discard(docker, v)
      .catch((e: unknown) => this.d.log.warn(`removing ${what}: ${(e as Error).message}`))
      .finally(() => this.removing.delete(p));
    this.removing.add(p);
  }

  private async plan(task: Task | undefined): Promise<Plan> {
    const config = this.d.config();
    const profile = resolveProfile(config, defaultProfile(config));
    const shared = task && task.profile === profile.name;
    const launch = await this.d.proxy.mintFor({
      role: shared ? "agent" : "lazy",
      profile: profile.name,
      taskId: task?.id ?? null,
      taskRef: task ? this.d.ledger.ref(task) : null,
    });
    const docker = await this.d.project.docker();
    const image = (await this.d.project.image(docker, config)).tag;
    const { net, proxyUrl } = await this.d.project.gateway(docker, config);
    // A warm container holds the committed tree as of its making: a new commit makes it stale.
    const head = (await Git.gitAsync(this.d.root, ["rev-parse", "--verify", "--quiet", "HEAD"], { allowFail: true })).out.trim();
    const key = JSON.stringify([image, net.name, proxyUrl, profile, launch.envVar, launch.placeholder, head]);
    return { docker, profile, launch, image, net: net.name, proxyUrl, key };
  }

  private owner(): number | undefined {
    return process.getuid?.() === 0 ? Image.agentUid() : undefined;
  }

  /** A container for one call, started and pinned; with `warm`, its harness started too, waiting for its prompt. */
  private async vessel(plan: Plan, warm: boolean): Promise<Vessel> {
    // A folder of its own under the state folder, the agent's to write; gone after the call.
    const id = randomBytes(6).toString("hex");
    const dir = join(this.d.stateDir, "calls", id);
    const uid = Image.agentUid();
    for (const sub of ["", "home", "harness", "turns"]) mkdirSync(join(dir, sub), { recursive: true, mode: 0o700 });
    if (process.getuid?.() === 0) for (const sub of ["", "home", "harness", "turns"]) lchownSync(join(dir, sub), uid, uid);
    const name = `lazy-${this.d.slug}-call-${id}`;
    this.active.add(name);
    const vessel: Vessel = { name, dir, container: "", placeholder: plan.launch.placeholder, key: plan.key };
    const remote = plan.docker.remote;
    try {
      // The project's committed tree at HEAD, in a volume of the call's own (never the checkout:
      // its ignored .env, untracked and uncommitted files); a remote engine's binary is a volume too.
      vessel.tree = name;
      const volumes = remote
        ? await this.d.remote.volumes(plan.docker, plan.image, this.d.root, name)
        : [await this.d.remote.tree(plan.docker, plan.image, this.d.root, name)];
      vessel.container = await plan.docker.create(
        {
          name,
          image: plan.image,
          project: this.d.slug,
          root: this.d.root,
          taskId: "",
          user: `${uid}:${uid}`,
          env: await containerEnvOf(this.d.root),
          mounts: remote
            ? []
            : [
                { host: join(dir, "home"), container: "/lazy/home", readOnly: false },
                { host: join(dir, "harness"), container: "/lazy/harness", readOnly: false },
                { host: join(dir, "turns"), container: "/lazy/turns", readOnly: false },
                { host: linuxBinary(), container: BIN, readOnly: true },
              ],
          volumes,
          network: plan.net,
          hostGateway: plan.docker.kind === "desktop",
          cmd: [BIN, "supervise", "--idle"],
          limits: resolveLimits(this.d.config().container.limits),
        },
        { start: !remote },
      );
      if (remote) await this.d.remote.ship(plan.docker, vessel.container);
      const info = await plan.docker.inspect(vessel.container);
      if (plan.docker.pins && info?.ip) vessel.ip = info.ip;
      // A warm container's address redeems nothing while it waits: should it die, Docker gives
      // that address to the next container on the network at once.
      if (!warm) await this.pin(vessel);
      else vessel.exec = await this.start(plan, vessel, { promptOnStdin: true });
      return vessel;
    } catch (e) {
      await this.discard(plan.docker, vessel);
      throw e;
    }
  }

  /** Accept the call's placeholder from its container's address, while the call runs. */
  private async pin(v: Vessel): Promise<void> {
    if (!v.ip || v.pinned) return;
    v.pinned = true;
    await this.d.proxy.pinCall(v.placeholder, v.ip);
  }

  /** Run the call's one turn in its container: the prompt on the command line, or later on stdin. */
  private async start(plan: Plan, vessel: Vessel, how: { prompt: string } | { promptOnStdin: true }): Promise<string> {
    const prepared = Harness.prepare({
      proxyUrl: plan.proxyUrl,
      envVar: plan.launch.envVar,
      placeholder: plan.launch.placeholder,
      profile: plan.profile,
      configDir: "/lazy/harness",
      ...how,
      oneShot: true,
      // The checkout holds what agents' branches merged (a .claude/settings.json hook): the call
      // loads none of its harness configuration, like lazy pair (harness/).
      untrustedCwd: this.d.root,
      args: [],
    });
    for (const [rel, content] of Object.entries(prepared.files))
      AgentDir.write(join(vessel.dir, "harness"), rel, content, { uid: this.owner() });
    if (plan.docker.remote) await this.d.remote.harness(plan.docker, vessel.container, prepared.files);
    const stdin = "promptOnStdin" in how ? ["--stdin", `/lazy/turns/${STDIN_FILE}`] : [];
    const uid = Image.agentUid();
    return plan.docker.execDetached(
      vessel.container,
      [BIN, "supervise", "--turn", "/lazy/turns/1", ...stdin, "--cwd", this.d.root, "--", ...prepared.command],
      prepared.env,
      `${uid}:${uid}`,
    );
  }

  /** The warm container, when there is one that fits this call and is still up; a stale one is removed. */
  private async takeSpare(plan: Plan): Promise<Vessel | undefined> {
    const spare = this.spare;
    if (!spare) return undefined;
    this.spare = undefined;
    clearTimeout(spare.expires);
    const v = spare.vessel;
    const ended = v.exec ? AgentDir.lstat(join(v.dir, "turns"), `1/${FILES.exit}`) !== null : false;
    const waiting = v.exec ? (await plan.docker.execState(v.exec))?.running === true : true;
    if (v.key === plan.key && !ended && waiting && (await plan.docker.inspect(v.container))?.running) return v;
    this.d.log.info(
      `the warm container for lazy's own calls ${v.key === plan.key ? "had ended" : "no longer fits (the configuration changed)"}: making one for this call`,
    );
    this.removeLater(plan.docker, v, "a stale call container");
    return undefined;
  }

  /** Have one container ready for the next call about no task. */
  private keepWarm(plan: Plan): void {
    // A remote engine's warm container would hold the project's tree as of its making.
    if (this.filling || this.closed || plan.docker.remote || process.env.LAZY_WARM_CALLS === "0") return;
    const warm = Harness.takesStdinPrompt(plan.profile.harness);
    this.filling = (async () => {
      const v = await this.vessel(plan, warm);
      if (this.closed || this.spare) return void (await this.discard(plan.docker, v));
      const expires = setTimeout(() => {
        if (this.spare?.vessel !== v) return;
        this.spare = undefined;
        this.removeLater(plan.docker, v, "an idle call container");
      }, SPARE_IDLE_MS);
      expires.unref();
      this.spare = { vessel: v, expires };
    })()
      .catch((e: unknown) => this.d.log.warn(`could not keep a container warm for lazy's own calls: ${(e as Error).message}`))
      .finally(() => {
        this.filling = undefined;
      });
  }

  /** Remove a call's container, its pin and its folder. */
  private async discard(docker: Runtime, v: Vessel): Promise<void> {
    try {
      // The address stops redeeming before the container goes: once it is gone, Docker may give
      // the address to another container.
      if (v.pinned && v.ip) {
        v.pinned = false;
        await this.d.proxy.unpinCall(v.placeholder, v.ip);
      }
    } finally {
      let gone = true;
      try {
        // The mirror stops before the container and the folder it writes into go.
        if (v.mirror) {
          v.mirror.going = false;
          await v.mirror.done;
        }
        if (v.container) {
          await docker.remove(v.container);
          // A container docker could not remove can still write its folder (links the daemon,
          // root in CI, would then follow while deleting): leave both to housekeeping, which
          // removes orphan call containers and then sweeps their folders.
          gone = !(await docker.inspect(v.container).catch(() => undefined));
        }
        if (gone && v.tree) await this.d.remote.removeVolume(docker, v.tree);
      } finally {
        this.active.delete(v.name);
        if (gone) rmSync(v.dir, { recursive: true, force: true });
        else this.d.log.warn(`call container ${v.name} could not be removed; housekeeping will try again`);
      }
    }
  }
}
