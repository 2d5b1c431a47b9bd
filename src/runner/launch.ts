/**
 * Starting a turn: lazy's main job. A turn mints the task's placeholder, makes sure its
 * worktree, image and container exist (containerReady), rewrites the harness's configuration
 * (prepareTurn), and starts the harness under the supervisor inside the container (launch);
 * turn-watch.ts then reads the turn's events. A launch refused before its turn ran says why.
 */
import { existsSync, lchownSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import * as AgentDir from "../agent-dir";
import { BROKER_MOUNT, type Broker, Share } from "../broker";
import { type Config, type ResolvedProfile, resolveLimits, resolveProfile } from "../config";
import { BIN, containerEnvOf, Engine, Image, type Runtime, taskMounts } from "../containers";
import * as Git from "../git";
import * as Harness from "../harness";
import type { McpTokens } from "../mcp";
import { withMemory } from "../own-calls";
import type { Preflight } from "../preflight";
import { MCP_PATH } from "../proxy";
import * as Remote from "../remote";
import type { Budgets, Holds } from "../spending";
import { canMove, HeldTurns, isFinal, Runs, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import { argvProblem } from "../util/prompt";
import type { DiskBound } from "./disk-bound";
import type { Lifecycle } from "./task-access";
import type { TurnQueue } from "./turn-queue";
import type { TurnWatch } from "./turn-watch";
import type { Workspaces } from "./workspace";

export interface LaunchDeps extends Lifecycle {
  root: string;
  mcp: Pick<McpTokens, "forTask">;
  ws: Workspaces;
  turns: TurnWatch;
  holds: () => Pick<Holds, "pauseFor" | "hold">;
  budgets: Pick<Budgets, "mayStart">;
  /** [limits] max_running: a turn past it is queued (turn-queue.ts). */
  queue: () => Pick<TurnQueue, "mayStart" | "put" | "next">;
  disk: Pick<DiskBound, "mayStart">;
  broker?: Pick<Broker, "forTask" | "bundle">;
  /** The harness check of an image this launch built (src/preflight; one it found is checked before). */
  preflight?: Pick<Preflight, "afterBuild">;
}

export class Launcher {
  constructor(private d: LaunchDeps) {}

  private ref(t: Task): string {
    return this.d.ledger.ref(t);
  }

  /** Run `fn` with the task counted as starting: no turn starts meanwhile, housekeeping leaves its containers be. */
  async busy<T>(task: Task, fn: () => Promise<T>): Promise<T> {
    if (task.status === "running" || this.d.starting.has(task.id))
      throw new LazyError("conflict", `Task ${this.ref(task)} is busy (a turn or a check); try again when it has ended.`);
    this.d.starting.add(task.id);
    try {
      return await fn();
    } finally {
      this.d.starting.delete(task.id);
    }
  }

  /**
   * Start the task's next turn: the first prompt, or a follow-up message. Past [limits]
   * max_running it is queued instead (`fromQueue`: the queue's own start, which keeps its place).
   */
  async start(ref: string, message?: string, fromQueue = false): Promise<Task> {
    const task = Tasks.resolve(this.d.db, ref);
    if (task.status === "running" || this.d.starting.has(task.id))
      throw new LazyError(
        "conflict",
        `Task ${this.ref(task)} is already running; wait for its turn to end, or lazy stop ${this.ref(task)}.`,
      );
    if (!canMove(task.status, "running"))
      throw new LazyError(
        "conflict",
        `Task ${this.ref(task)} is ${task.status}; ${isFinal(task.status) ? "its session has ended" : "it cannot start a turn now"}.`,
      );
    if (message !== undefined && task.status === "queued" && Runs.get(this.d.db, task.id).turn === 0)
      throw new LazyError("conflict", `Task ${this.ref(task)} has not started yet: lazy start ${this.ref(task)} runs its first turn.`);
    this.d.starting.add(task.id);
    try {
      if (this.d.proxy.state !== "ready") throw LazyError.of("proxy_unavailable", { reason: "proxy_not_ready", what: "turn" });
      const config = this.d.config();
      const profile = resolveProfile(config, task.profile);
      // [budget]: a task that reached its budget (or a project that reached today's) starts nothing.
      this.d.budgets.mayStart(task);
      // [container.limits] disk: a task at its bound (or a disk under lazy's floor) starts nothing.
      await this.d.disk.mayStart(task);
      // [usage_pause]: a credential past its threshold (or refused for quota) starts nothing.
      const pause = await this.d.holds().pauseFor(profile);
      if (pause) return this.d.holds().hold(task, message, pause);
      // [limits] max_running: past it the turn waits its turn, queued.
      if (!this.d.queue().mayStart(task.id, fromQueue)) return fromQueue ? task : this.d.queue().put(task, message);
      const queued = HeldTurns.forTask(this.d.db, task.id);
      if (queued?.window === HeldTurns.SLOT) {
        HeldTurns.remove(this.d.db, queued.id);
        // Started before its place came: what it was queued with goes too.
        if (!fromQueue && queued.message) message = message === undefined ? queued.message : `${queued.message}\n\n${message}`;
      }
      // The credential must exist before anything starts (the placeholder stands for it).
      const launch = await this.d.proxy.mintFor({ role: "agent", profile: profile.name, taskId: task.id, taskRef: this.ref(task) });
      const docker = await this.connected(task);
      const box = await this.containerReady(task, config, docker, launch.placeholder);
      const turn = this.prepareTurn(task, profile, launch, box.proxyUrl, message);
      // The grant redeems from here to the turn's end; every proxy thread knows before the harness starts.
      await this.d.proxy.hold(task.id, "turn");
      return await this.launch(task, docker, box, turn, message);
    } catch (e) {
      if (Tasks.resolve(this.d.db, task.id).status !== "running") this.d.proxy.release(task.id, "turn");
      this.refusedLaunch(task, e);
      throw e;
    } finally {
      this.d.starting.delete(task.id);
      // A launch that did not become a turn freed its slot: a queued turn may take it.
      if (!fromQueue && Tasks.byId(this.d.db, task.id)?.status !== "running") void this.d.queue().next();
    }
  }

  /** The engine's connection; an ssh:// engine's tunnel that takes a while shows in the launch's progress. */
  private async connected(task: Task): Promise<Runtime> {
    const ep = this.d.project.engineEndpoint();
    const slow = Engine.isSsh(ep) ? setTimeout(() => this.d.ledger.event(task, "engine", { connecting: ep.host }), 2000) : undefined;
    try {
      return await this.d.project.docker();
    } finally {
      clearTimeout(slow);
    }
  }

  /**
   * A launch that failed before its turn ran: a task that never ran says `failed` with the
   * reason (so a retried `lazy run` in CI leaves no `queued` litter and the list says why);
   * one that ran before keeps its status, and its events say what was refused.
   */
  private refusedLaunch(task: Task, e: unknown): void {
    const now = Tasks.resolve(this.d.db, task.id);
    if (now.status === "running" && this.d.turns.has(task.id)) return; // the turn began; its own failure path records it
    const reason = e instanceof LazyError ? e.message : `lazy failed to launch the turn: ${(e as Error)?.message ?? String(e)}`;
    // Running with no turn followed: the supervisor's exec was refused (the task went running just before).
    if (now.status === "queued" || now.status === "running") this.d.ledger.move(now, "failed", { error: reason, launch: "refused" });
    else this.d.ledger.event(now, "refused", { reason });
  }

  /**
   * As root the agent is another uid (1000), and the container sees the repository's refs and
   * objects at their host paths: they must be readable by others. lazy never changes a
   * permission of the person's own files; it names the folder instead (a checkout made under
   * `umask 077`). The folders above them need nothing: nothing of the checkout is mounted.
   */
  private agentCanRead(uid: number): void {
    const common = Git.commonDir(this.d.root);
    for (const dir of [common, join(common, "refs"), join(common, "objects")]) {
      const mode = statSync(dir).mode & 0o777;
      if ((mode & 0o005) !== 0o005) throw LazyError.of("launch_refused", { reason: "agent_cannot_read", uid, dir, mode: mode.toString(8) });
    }
  }

  /**
   * Step 1 of a turn: the task's worktree, the project's network (and where the container
   * reaches the proxy on it), the image, and a running container with its setup done.
   */
  private async containerReady(
    task: Task,
    config: Config,
    docker: Runtime,
    placeholder: string,
  ): Promise<{ id: string; g: Git.TaskGit; proxyUrl: string; env: Record<string, string> }> {
    const uid = Image.agentUid();
    const asRoot = process.getuid?.() === 0;
    if (asRoot) this.agentCanRead(uid);
    const tdir = this.d.ws.taskDir(task);
    // tasks/<id> is lazy's; its sub-folders are mount roots the agent writes below, never replaces.
    const workspace = async () => {
      for (const sub of ["home", "harness", "turns"]) mkdirSync(join(tdir, sub), { recursive: true, mode: 0o700 });
      if (asRoot) for (const sub of ["", "home", "harness", "turns"]) lchownSync(join(tdir, sub), uid, uid);
      return this.d.ws.taskGit(task, asRoot ? uid : null);
    };
    // Before anything of the task is made (worktree, network, image, container): the files
    // beside lazy.toml it is about to use are as approved with lazy trust (config/trust.ts).
    const before = Runs.get(this.d.db, task.id);
    await this.d.project.trusted(docker, config, {
      setup: !before.setup_done && !!config.container.setup,
      include: !existsSync(this.d.ws.worktree(task)),
    });
    // The container's environment (the person's git identity): asked once, beside the rest.
    const baseEnv = containerEnvOf(this.d.root);
    baseEnv.catch(() => {}); // awaited below, once the worktree and network are there
    // On this machine the worktree comes first: what the project names for it (.worktreeinclude)
    // is refused before a build that may take minutes. On a remote engine it comes last: an engine
    // whose containers cannot reach the proxy is refused before anything of the task is made.
    // The network step need not wait for the worktree or the image: as root its firewall rules
    // are set from the host, and without root from a helper container of the task image, so
    // then only when that image is there already (every launch but a project's first). It
    // starts now and goes on while the worktree is made.
    const early =
      !docker.remote && (asRoot || (await this.d.project.imagePresent(docker, config)))
        ? this.d.project.sharedGateway(docker, config)
        : undefined;
    early?.catch(() => {}); // awaited below; a refused worktree must not leave it unhandled
    let g = docker.remote ? undefined : await workspace();
    let built = false;
    // The image has the harnesses lazy.toml's profiles use, and this task's (a built-in profile).
    const harness = resolveProfile(config, task.profile).harness;
    const image = await this.d.project.image(
      docker,
      config,
      (data) => {
        built = true;
        this.d.ledger.event(task, "build", data);
      },
      [harness],
    );
    // After the image: without root, the network's firewall rules are set from a helper
    // container of that image. Launches at once join the one under way (Docker refuses a second
    // network of one name, and the rules are the same). After a build (minutes) they are set
    // again, right before the container starts, as they always were.
    // An image built just now was not there for the preflight: its harness is checked here.
    if (built && this.d.preflight)
      await this.d.preflight.afterBuild(docker, image.tag, resolveProfile(config, task.profile).harness, config);
    const { net, proxyUrl } = await (early && !built ? early : this.d.project.sharedGateway(docker, config));
    if (docker.remote) await this.d.remote.probe(docker, image.tag, net.name, proxyUrl);
    g ??= await workspace();
    // Brokered services (src/broker): through lazy's egress proxy only, so not on a remote engine,
    // under Docker Desktop or with network = "open"/"none".
    const brokered =
      !!this.d.broker && !docker.remote && docker.kind !== "desktop" && ["allowlist", "observe"].includes(config.container.network);
    const brokerDir = join(tdir, "broker");
    mkdirSync(brokerDir, { recursive: true, mode: 0o755 });
    const share = brokered ? this.d.broker!.forTask({ id: task.id, ref: this.ref(task) }, brokerDir) : {};
    const env = Share.merge({ ...(await baseEnv), ...this.d.project.netEnv() }, share);

    const hostCa = brokered ? this.d.broker!.bundle(this.d.project.hostCa(config)) : this.d.project.hostCa(config);
    const run = Runs.get(this.d.db, task.id);
    let info = run.container_id ? await docker.inspect(run.container_id) : undefined;
    // The container stopped with the last turn (halt): started again, with its filesystem as the
    // agent left it (packages it installed stay). One that will not start is made anew.
    if (info && !info.running)
      try {
        await docker.start(info.id);
        info = await docker.inspect(info.id);
      } catch (e) {
        this.d.log.warn(`task ${this.ref(task)}: its container would not start again (${(e as Error).message}); making a new one`);
      }
    if (!info?.running) {
      if (info) await docker.remove(info.id);
      for (const c of await docker.list(this.d.slug)) if (c.taskId === task.id) await docker.remove(c.id);
      const id = await docker.create(
        {
          name: this.d.ws.containerName(task),
          image: image.tag,
          project: this.d.slug,
          root: this.d.root,
          taskId: task.id,
          user: `${uid}:${uid}`,
          env,
          // A remote engine mounts nothing of this host: what the container needs is shipped in.
          mounts: docker.remote ? [] : [...taskMounts(g, tdir, hostCa), { host: brokerDir, container: BROKER_MOUNT, readOnly: true }],
          volumes: docker.remote ? await this.d.remote.volumes(docker, task, g, image.tag) : [],
          network: net.name,
          hostGateway: docker.kind === "desktop",
          cmd: [BIN, "supervise", "--idle"],
          limits: resolveLimits(config.container.limits),
        },
        { start: !docker.remote },
      );
      if (docker.remote) await this.d.remote.shipInto(docker, id, task, g);
      Runs.save(this.d.db, task.id, { container_id: id });
      info = await docker.inspect(id);
    }
    if (!info) throw LazyError.of("launch_refused", { reason: "container_vanished", taskId: task.id });
    // Its MCP token is pinned with its placeholder (one rule: proxy/identity/pin.ts).
    if (docker.pins && info.ip) await this.d.proxy.pin(placeholder, info.ip);

    if (!run.setup_done && config.container.setup) {
      this.d.ledger.event(task, "setup", { command: config.container.setup });
      const r = await docker.exec(info.id, ["sh", "-c", config.container.setup], `${uid}:${uid}`, env, g.worktree);
      this.d.ledger.event(task, "setup", { code: r.code, output: r.output.slice(-4000) });
      if (r.code !== 0) throw LazyError.of("launch_refused", { reason: "setup_failed", exit: r.code, task: this.ref(task) });
    }
    Runs.save(this.d.db, task.id, { setup_done: 1 });
    return { id: info.id, g, proxyUrl, env };
  }

  /**
   * Step 2: the harness's configuration, rewritten before every turn in the folder lazy gives
   * it (the agent's to write: never through a link it left there), and a clear turn folder.
   */
  private prepareTurn(
    task: Task,
    profile: ResolvedProfile,
    launch: { envVar: string; placeholder: string },
    proxyUrl: string,
    message: string | undefined,
  ): { n: number; prepared: Harness.Prepared } {
    const run = Runs.get(this.d.db, task.id);
    const sameProfile = run.profile === profile.name;
    const harnessDir = join(this.d.ws.taskDir(task), "harness");
    let resume = message !== undefined && sameProfile ? (run.session ?? undefined) : undefined;
    // A turn killed before the harness saved its transcript (its container stopped from inside)
    // leaves a session that cannot be resumed: the next turn starts a new one, and says so.
    if (resume && Harness.sessionSaved(profile.harness, harnessDir, resume) === false) {
      this.d.ledger.event(task, "refused", {
        reason: `session ${resume} left no transcript (its turn was killed first); this turn starts a new session`,
      });
      resume = undefined;
    }
    const prepared = Harness.prepare({
      proxyUrl,
      envVar: launch.envVar,
      placeholder: launch.placeholder,
      profile,
      configDir: "/lazy/harness",
      // A task's first turn carries the project's memory (within its bound).
      prompt: message ?? (run.turn === 0 ? withMemory(this.d.db, task.prompt) : task.prompt),
      resume,
      // lazy's MCP tools, on the listener the container reaches the proxy at.
      mcp: { url: `${proxyUrl}${MCP_PATH}`, token: this.d.mcp.forTask(task.id).token },
      args:
        profile.harness === "claude"
          ? ["--dangerously-skip-permissions"]
          : profile.harness === "codex"
            ? ["--dangerously-bypass-approvals-and-sandbox"]
            : [],
    });
    const uid = process.getuid?.() === 0 ? Image.agentUid() : undefined;
    for (const [rel, content] of Object.entries(prepared.files)) AgentDir.write(harnessDir, rel, content, { uid });
    // The supervisor makes the turn's folder inside the container; whatever the agent put at
    // that name beforehand is moved aside, and a link there refuses the turn.
    const n = run.turn + 1;
    this.d.ws.clearTurnDir(task, n);
    // A message answers the agent's question, if it asked one.
    Runs.save(this.d.db, task.id, {
      turn: n,
      offset: 0,
      profile: profile.name,
      stopped_turn: null,
      ...(message !== undefined ? { question: null } : {}),
    });
    return { n, prepared };
  }

  /** Step 3: the task is running; the supervisor starts the harness in the container. */
  private async launch(
    task: Task,
    docker: Runtime,
    box: { id: string; g: Git.TaskGit; env: Record<string, string> },
    turn: { n: number; prepared: Harness.Prepared },
    message: string | undefined,
  ): Promise<Task> {
    const uid = Image.agentUid();
    const profile = Runs.get(this.d.db, task.id).profile;
    const argv = [BIN, "supervise", "--turn", `/lazy/turns/${turn.n}`, "--cwd", box.g.worktree, "--", ...turn.prepared.command];
    // Refused here, with its cause, rather than by the exec after the task went running.
    const tooLong = argvProblem(argv);
    if (tooLong) throw new LazyError("launch_refused", tooLong);
    task = this.d.ledger.move(task, "running", { turn: turn.n, profile, ...(message !== undefined ? { message } : {}) });
    if (message !== undefined) this.d.ledger.event(task, "user", { text: message });
    if (docker.remote) await Remote.shipHarness(docker, box.id, turn.prepared.files, uid);
    const execId = await docker.execDetached(box.id, argv, { ...box.env, ...turn.prepared.env }, `${uid}:${uid}`);
    this.d.turns.follow(task, execId);
    if (docker.remote) this.d.remote.mirror(task, box.id, turn.n);
    return task;
  }
}
