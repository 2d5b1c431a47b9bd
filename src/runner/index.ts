/**
 * Task turns: lazy's main job. A turn mints the task's placeholder, makes sure its worktree,
 * image and container exist, rewrites the harness's configuration, and starts the harness
 * under the supervisor inside the container; turn-watch.ts then reads the turn's events, brings
 * the agent's commits onto the task's branch and settles the task's status. Sessions end in
 * endings.ts (accept, reject, close). Housekeeping keeps statuses honest: a restarted daemon
 * finds its containers by label and reconciles every task.
 */
import type { Database } from "bun:sqlite";
import { existsSync, mkdirSync, statSync, lchownSync, renameSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { Tasks, Runs, canMove, isFinal, type Task, type Run } from "../store";
import type { Status } from "../store";
import { defaultProfile, resolveLimits, resolveProfile, Trust, type Config, type ResolvedProfile } from "../config";
import { Runtime, Image, Engine, HostNet, type Fence, type LinkLocalGuard, type NetworkOptions } from "../containers";
import * as Git from "../git";
import * as Harness from "../harness";
import { MCP_PATH, type ModelProxy } from "../proxy";
import type { McpTokens } from "../mcp";
import type { Egress } from "../egress";
import { LazyError } from "../util/errors";
import { argvProblem } from "../util/prompt";
import * as AgentDir from "../util/agent-dir";
import type { Logger } from "../util/log";
import type { Bus } from "../bus";
import { BIN, containerEnv, taskMounts } from "./container-spec";
import { Holds, Budgets } from "../spending";
import { OwnCalls } from "./own-calls";
import { Compactor, withMemory } from "./memory";
import { TurnWatch } from "./turn-watch";
import * as Remote from "./remote";
import { RemoteTasks } from "./remote-tasks";
import { Endings } from "./endings";
import { Groups, type NewGroup } from "./groups";
import type { TaskAccess } from "./task-access";

export interface RunnerDeps {
  root: string;
  slug: string;
  stateDir: string;
  db: Database;
  proxy: ModelProxy;
  /** MCP tokens: a task's is revoked with its session, independently of its grants. */
  mcp: Pick<McpTokens, "revokeTask" | "forTask" | "pin" | "unpin">;
  config: () => Config;
  bus: Bus;
  log: Logger;
  /** The egress proxy: the fence's ports, and the proxy variables a fenced container gets. */
  egress: Pick<Egress, "fenceFor" | "envFor" | "unlisten">;
}

export class Runner {
  private runtime: Promise<Runtime> | undefined;
  /** The Docker endpoint the runtime connected to (lazy doctor compares it with the shell's). */
  private endpoint: Engine.Endpoint | undefined;
  /** The last word on whether the project's containers can reach link-local metadata addresses. */
  private guard: LinkLocalGuard | undefined;
  private fence: Fence.State | undefined;
  private housekeeping: Timer | undefined;
  private starting = new Set<string>();
  /** What task containers' environments add for the network fence (the egress proxy's address), as of the last gateway(). */
  private netEnv: Record<string, string> = {};

  private holds: Holds;
  /** Reading running turns (turn-watch.ts). */
  private turns: TurnWatch;
  /** accept, reject, close (endings.ts). */
  private endings: Endings;
  readonly budgets: Budgets;
  /** lazy's own model calls (the accept summary, lazy ask, lazy report, memory compaction). */
  readonly calls: OwnCalls;
  /** Compacts project memory past its bound, with one of lazy's own calls. */
  readonly memory: Compactor;
  /** Best-of-N groups: making one, the [review] check on its candidates. */
  readonly groups: Groups;
  /**
   * What launches at once (best-of-N) share rather than each doing it: an image build of a tag
   * under way, and the network with its firewall rules being ensured (gateway()).
   */
  private building = new Map<string, Promise<void>>();
  private ensuring: ReturnType<Runner["gateway"]> | undefined;

  /** Tasks on a remote engine: shipping in, mirroring and bringing back (remote-tasks.ts). */
  private remote: RemoteTasks;

  constructor(private d: RunnerDeps) {
    this.remote = new RemoteTasks({
      slug: d.slug,
      stateDir: d.stateDir,
      log: d.log,
      docker: () => this.docker(),
      ref: (t) => this.ref(t),
      taskDir: (t) => this.taskDir(t),
      recordedGit: (t) => this.recordedGit(t),
      following: (id) => this.turns.has(id),
      turnOf: (id) => this.run(id).turn,
      containerOf: (id) => this.run(id).container_id,
    });
    this.calls = new OwnCalls({
      root: d.root,
      slug: d.slug,
      stateDir: d.stateDir,
      db: d.db,
      proxy: d.proxy,
      config: d.config,
      log: d.log,
      docker: () => this.docker(),
      gateway: (docker, config) => this.gateway(docker, config),
      image: (docker, config) => this.image(docker, config),
      ref: (t) => this.ref(t),
    });
    this.memory = new Compactor(d.db, this.calls, d.log);
    this.budgets = new Budgets({
      db: d.db,
      config: d.config,
      proxy: d.proxy,
      log: d.log,
      move: (t, to, data) => this.move(t, to, data),
      ref: (t) => this.ref(t),
    });
    // What turn-watch.ts and endings.ts borrow of the runner (task-access.ts).
    const access: TaskAccess = {
      root: d.root,
      db: d.db,
      log: d.log,
      docker: () => this.docker(),
      event: (t, kind, data) => this.event(t, kind, data),
      move: (t, to, data) => this.move(t, to, data),
      ref: (t) => this.ref(t),
      taskDir: (t) => this.taskDir(t),
      recordedGit: (t) => this.recordedGit(t),
    };
    this.turns = new TurnWatch({
      ...access,
      config: d.config,
      budgets: this.budgets,
      release: (id) => d.proxy.release(id, "turn"),
      halt: (t) => this.halt(t),
      bringBack: (t) => this.remote.bringBack(t),
    });
    // A daemon restarted mid-turn: those turns' grants redeem until their turns end.
    for (const t of Tasks.list(d.db, { status: "running" }))
      void d.proxy.hold(t.id, "turn").catch((e: unknown) => d.log.warn(`task ${t.id}'s grant: ${(e as Error).message}`));
    this.endings = new Endings({
      ...access,
      slug: d.slug,
      proxy: d.proxy,
      mcp: d.mcp,
      calls: this.calls,
      dropIdleNetwork: () => this.dropIdleNetwork(),
    });
    this.groups = new Groups({
      root: d.root,
      slug: d.slug,
      db: d.db,
      log: d.log,
      config: d.config,
      docker: () => this.docker(),
      ref: (t) => this.ref(t),
      taskDir: (t) => this.taskDir(t),
      recordedGit: (t) => this.recordedGit(t),
      event: (t, kind, data) => this.event(t, kind, data),
      image: (docker, config) => this.image(docker, config),
      gateway: (docker, config) => this.gateway(docker, config),
      netEnv: () => this.netEnv,
      hostCa: (config) => this.hostCa(config),
      busy: (t, fn) => this.busy(t, fn),
    });
    this.holds = new Holds({
      db: d.db,
      proxy: d.proxy,
      config: d.config,
      log: d.log,
      move: (t, to, data) => this.move(t, to, data),
      event: (t, kind, data) => this.event(t, kind, data),
      start: (id, message) => this.start(id, message),
      ref: (t) => this.ref(t),
    });
  }

  /** One Runtime for the daemon: callers at start-up share the connection under way. */
  private docker(): Promise<Runtime> {
    this.runtime ??= Runtime.connect(this.d.log).then(
      (r) => {
        this.endpoint = r.endpoint;
        return r;
      },
      (e: unknown) => {
        this.runtime = undefined; // the engine may come up later
        throw e;
      },
    );
    return this.runtime;
  }

  /** Where this daemon's containers run: the engine it connected to, or, before that, the one it would. */
  engineEndpoint(): Engine.Endpoint {
    return this.endpoint ?? Engine.resolve();
  }

  /** What the project's network options are now (the config reloads). */
  private networkOptions(config: Config): NetworkOptions {
    let helperImage: string | undefined;
    try {
      helperImage = this.plan(config).image.tag;
    } catch {} // no task image yet (a missing Dockerfile): the guard says it needs one
    const fence = {
      mode: config.container.network,
      ports: async (gw: string) => this.d.egress.fenceFor(config, gw, (await this.d.proxy.listenFor(gw)).port).ports,
    };
    return { allowMetadata: config.container.allow_metadata, helperImage, fence };
  }

  /** The link-local guard's state, for lazy doctor; undefined until a network was ensured. */
  metadataGuard(): LinkLocalGuard | undefined {
    return this.guard;
  }

  /** The network fence's state, for lazy doctor; undefined until a network was ensured. */
  fenceState(): Fence.State | undefined {
    return this.fence;
  }

  /** Keep the guard's state, and say it once in the log when it changes. */
  private noteGuard(g: LinkLocalGuard): void {
    const before = this.guard;
    this.guard = g;
    if (JSON.stringify(before) === JSON.stringify(g)) return;
    if (g.state === "blocked")
      this.d.log.info(`task containers cannot reach link-local metadata addresses (firewall rules on ${g.bridge})`);
    else if (g.state === "allowed")
      this.d.log.warn(`[container] allow_metadata = true: task containers can reach link-local metadata addresses such as 169.254.169.254`);
    else this.d.log.warn(`link-local metadata addresses are NOT blocked for task containers: ${g.reason}; ${g.remedy}`);
  }

  /** Say in the log when what task containers can reach changes (containers/fence.ts). */
  private noteFence(f: Fence.State): void {
    const before = JSON.stringify(this.fence);
    this.fence = f;
    if (before === JSON.stringify(f)) return;
    if (f.state === "fenced")
      this.d.log.info(`network fence (${f.mode}) on ${f.bridge}: task containers reach only gateway ports ${f.ports.join(", ")}`);
    else if (f.state === "open") this.d.log.warn(`[container] network = "open": task containers reach any address (the fence is off)`);
    else this.d.log.warn(`the network fence is NOT set for task containers: ${f.reason}; ${f.remedy}`);
  }

  private run(taskId: string): Run {
    return Runs.get(this.d.db, taskId);
  }

  private save(taskId: string, patch: Runs.RunPatch): void {
    Runs.save(this.d.db, taskId, patch);
  }

  private event(task: Task, kind: string, data: Record<string, unknown>): void {
    Tasks.addEvent(this.d.db, task.id, kind, data);
    this.d.bus.publish({ kind: "task", taskId: task.id });
  }

  private move(task: Task, to: Status, data: Record<string, unknown> = {}): Task {
    const t = Tasks.move(this.d.db, task.id, to, data);
    // A task that stops running: its grants stop redeeming (a turn's end releases earlier, too).
    if (to !== "running") this.d.proxy.release(task.id, "turn");
    this.d.bus.publish({ kind: "task", taskId: task.id });
    this.d.bus.publish({ kind: "status", taskId: task.id, from: task.status, to, data });
    return t;
  }

  ref = (t: Task) => t.code ?? t.id;
  taskDir = (t: Task) => join(this.d.stateDir, "tasks", t.id);
  worktree = (t: Task) => join(this.d.stateDir, "worktrees", this.ref(t));
  containerName = (t: Task) => `lazy-${this.d.slug}-${t.id}`;

  /** Add a task (the CLI, the dashboard, a builder session): its profile must exist. */
  add(input: { prompt: string; title?: string; code?: string; profile?: string }): Task {
    const config = this.d.config();
    const profile = input.profile ?? defaultProfile(config);
    resolveProfile(config, profile);
    const task = Tasks.add(this.d.db, { ...input, profile });
    this.d.bus.publish({ kind: "task", taskId: task.id });
    return task;
  }

  /** Add a best-of-N group: one candidate task per profile, from one prompt (runner/groups.ts). */
  addGroup(input: NewGroup): { group: string; tasks: Task[] } {
    const r = this.groups.add(input);
    for (const t of r.tasks) this.d.bus.publish({ kind: "task", taskId: t.id });
    return r;
  }

  /** Run `fn` with the task counted as starting: no turn starts meanwhile, housekeeping leaves its containers be. */
  private async busy<T>(task: Task, fn: () => Promise<T>): Promise<T> {
    if (task.status === "running" || this.starting.has(task.id))
      throw new LazyError("conflict", `Task ${this.ref(task)} is busy (a turn or a check); try again when it has ended.`);
    this.starting.add(task.id);
    try {
      return await fn();
    } finally {
      this.starting.delete(task.id);
    }
  }

  /** Start the task's next turn: the first prompt, or a follow-up message. */
  async start(ref: string, message?: string): Promise<Task> {
    const task = Tasks.resolve(this.d.db, ref);
    if (task.status === "running" || this.starting.has(task.id))
      throw new LazyError(
        "conflict",
        `Task ${this.ref(task)} is already running; wait for its turn to end, or lazy stop ${this.ref(task)}.`,
      );
    if (!canMove(task.status, "running"))
      throw new LazyError(
        "conflict",
        `Task ${this.ref(task)} is ${task.status}; ${isFinal(task.status) ? "its session has ended" : "it cannot start a turn now"}.`,
      );
    if (message !== undefined && task.status === "queued")
      throw new LazyError("conflict", `Task ${this.ref(task)} has not started yet: lazy start ${this.ref(task)} runs its first turn.`);
    this.starting.add(task.id);
    try {
      if (this.d.proxy.state !== "ready")
        throw new LazyError(
          "proxy_unavailable",
          "The model proxy is not available, so no turn can start; run lazy doctor for the finding and remedy.",
        );
      const config = this.d.config();
      const profile = resolveProfile(config, task.profile);
      // [budget]: a task that reached its budget (or a project that reached today's) starts nothing.
      this.budgets.mayStart(task);
      // [usage_pause]: a credential past its threshold (or refused for quota) starts nothing.
      const pause = await this.holds.pauseFor(profile);
      if (pause) return this.holds.hold(task, message, pause);
      // The credential must exist before anything starts (the placeholder stands for it).
      const launch = await this.d.proxy.mintFor({ role: "agent", profile: profile.name, taskId: task.id, taskRef: this.ref(task) });
      const docker = await this.docker();
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
      this.starting.delete(task.id);
    }
  }

  /**
   * A launch that failed before its turn ran: a task that never ran says `failed` with the
   * reason (so a retried `lazy run` in CI leaves no `queued` litter and the list says why);
   * one that ran before keeps its status, and its events say what was refused.
   */
  private refusedLaunch(task: Task, e: unknown): void {
    const now = Tasks.resolve(this.d.db, task.id);
    if (now.status === "running" && this.turns.has(task.id)) return; // the turn began; its own failure path records it
    const reason = e instanceof LazyError ? e.message : `lazy failed to launch the turn: ${(e as Error)?.message ?? String(e)}`;
    // Running with no turn followed: the supervisor's exec was refused (the task went running just before).
    if (now.status === "queued" || now.status === "running") this.move(now, "failed", { error: reason, launch: "refused" });
    else this.event(now, "refused", { reason });
  }

  /**
   * As root the agent is another uid (1000), and the container sees the project's git folder at
   * its host path: that folder and its objects must be readable by others. lazy never changes a
   * permission of the person's own files; it names the folder instead (a checkout made under
   * `umask 077`). The folders above it need nothing: a checkout the agent cannot open is not
   * mounted, only its git folder.
   */
  private agentCanRead(uid: number): void {
    const common = Git.commonDir(this.d.root);
    for (const dir of [common, join(common, "objects")]) {
      const mode = statSync(dir).mode & 0o777;
      if ((mode & 0o005) !== 0o005)
        throw new LazyError(
          "launch_refused",
          `lazy runs as root, so the agent runs as uid ${uid}, which cannot read ${dir} (mode ${mode.toString(8)}): the checkout was made under a umask that keeps others out; make it again with umask 022, or run lazy as the checkout's own user.`,
        );
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
  ): Promise<{ id: string; g: Git.TaskGit; proxyUrl: string }> {
    const uid = Image.agentUid();
    const asRoot = process.getuid?.() === 0;
    if (asRoot) this.agentCanRead(uid);
    const tdir = this.taskDir(task);
    const image = await this.image(docker, config, task);
    // After the image: without root, the network's firewall rules are set from a helper
    // container of that image. Launches at once join the one under way (Docker refuses a second
    // network of one name, and the rules are the same). Before the worktree: a remote engine
    // that cannot reach the proxy is refused before anything of the task is made.
    this.ensuring ??= this.gateway(docker, config).finally(() => {
      this.ensuring = undefined;
    });
    const { net, proxyUrl } = await this.ensuring;
    if (docker.remote) await this.remote.probe(docker, image.tag, net.name, proxyUrl);
    // tasks/<id> is lazy's; its sub-folders are mount roots the agent writes below, never replaces.
    for (const sub of ["home", "harness", "turns"]) mkdirSync(join(tdir, sub), { recursive: true, mode: 0o700 });
    if (asRoot) for (const sub of ["", "home", "harness", "turns"]) lchownSync(join(tdir, sub), uid, uid);
    const g = this.taskGit(task, asRoot ? uid : null);

    const hostCa = this.hostCa(config);

    const run = this.run(task.id);
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
          name: this.containerName(task),
          image: image.tag,
          project: this.d.slug,
          root: this.d.root,
          taskId: task.id,
          user: `${uid}:${uid}`,
          env: { ...containerEnv(this.d.root), ...this.netEnv },
          // A remote engine mounts nothing of this host: what the container needs is shipped in.
          mounts: docker.remote ? [] : taskMounts(this.d.root, g, tdir, hostCa),
          volumes: docker.remote ? await this.remote.volumes(docker, task, g, image.tag) : [],
          network: net.name,
          hostGateway: docker.kind === "desktop",
          cmd: [BIN, "supervise", "--idle"],
          limits: resolveLimits(config.container.limits),
        },
        { start: !docker.remote },
      );
      if (docker.remote) await this.remote.shipInto(docker, id, task, g);
      this.save(task.id, { container_id: id });
      info = await docker.inspect(id);
    }
    if (!info)
      throw new LazyError(
        "launch_refused",
        `The task's container vanished as it started; see lazy daemon logs, or docker ps -a --filter label=dev.lazy.task=${task.id}.`,
      );
    if (docker.pins && info.ip) await this.d.proxy.pin(placeholder, info.ip).then(() => this.d.mcp.pin(task.id, info.ip!));

    if (!run.setup_done && config.container.setup) {
      this.event(task, "setup", { command: config.container.setup });
      const r = await docker.exec(
        info.id,
        ["sh", "-c", config.container.setup],
        `${uid}:${uid}`,
        { ...containerEnv(this.d.root), ...this.netEnv },
        g.worktree,
      );
      this.event(task, "setup", { code: r.code, output: r.output.slice(-4000) });
      if (r.code !== 0)
        throw new LazyError("launch_refused", `[container] setup failed with exit code ${r.code}; see lazy logs ${this.ref(task)}.`);
    }
    this.save(task.id, { setup_done: 1 });
    return { id: info.id, g, proxyUrl };
  }

  /**
   * Where a container reaches the proxy: the project network's gateway (native Linux), or
   * host.docker.internal (Docker Desktop). Agent turns and lazy's own calls alike.
   */
  async gateway(docker: Runtime, config: Config): Promise<{ net: { name: string; gateway: string }; proxyUrl: string }> {
    // A remote engine's network is not this host's: its containers reach the proxy at [proxy] remote_bind.
    const bind = docker.remote ? Remote.bindFor(docker, config) : undefined;
    const net = await docker.ensureNetwork(this.d.slug, this.networkOptions(config));
    this.noteGuard(net.guard);
    this.noteFence(net.fence);
    // A remote engine's containers get neither the egress proxy nor the host's CA file (nothing
    // of this host is mounted there).
    const fenced = docker.kind === "desktop" || bind ? {} : this.d.egress.envFor(config, net.gateway);
    this.netEnv = bind ? {} : { ...this.hostEnv(config), ...fenced };
    if (bind) {
      const a = await this.d.proxy.listenFor(bind);
      return { net, proxyUrl: `http://${a.host}:${a.port}` };
    }
    if (docker.kind === "desktop") return { net, proxyUrl: `http://host.docker.internal:${this.d.proxy.address!.port}` };
    const a = await this.d.proxy.listenFor(net.gateway);
    return { net, proxyUrl: `http://${a.host}:${a.port}` };
  }

  /**
   * The task image's plan, with the host's network setup when [container] inherit_network_env
   * is on (containers/host-network.ts): its CA bundle (checked; a file that does not parse is
   * refused by name) changes the tag, so a new certificate builds anew.
   */
  private plan(config: Config): { image: Image.ImagePlan; host: HostNet.HostNetwork; raw: Image.ImagePlan } {
    const raw = Image.plan(this.d.root, config.container);
    const host: HostNet.HostNetwork = config.container.inherit_network_env ? HostNet.read() : { ca: null, proxy: {} };
    return { image: HostNet.apply(raw, host), host, raw };
  }

  /**
   * The host's share of a task container's environment ([container] inherit_network_env): the
   * CA variables, and the host's proxy only where no fence puts lazy's egress proxy there and
   * only without a password in it (the agent could send it anywhere).
   */
  private hostEnv(config: Config): Record<string, string> {
    if (!config.container.inherit_network_env) return {};
    const { env, withheld } = HostNet.containerEnv(this.plan(config).host, config.container.network !== "open");
    if (withheld.length)
      this.d.log.warn(
        `the host's ${withheld.join(", ")} carries a password: task containers do not get it (network = "allowlist" or "observe" reach the network through lazy's egress proxy instead)`,
      );
    return env;
  }

  /** The host's CA bundle as a file in the state folder, for a task container to mount (null when none is inherited). */
  private hostCa(config: Config): string | null {
    const ca = this.plan(config).host.ca;
    if (!ca) return null;
    const file = join(this.d.stateDir, `host-ca-${ca.hash}.pem`);
    if (!existsSync(file)) {
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, ca.pem, { mode: 0o644 });
      renameSync(tmp, file);
    }
    return file;
  }

  /** The task image, built first if it is missing (its steps recorded on `task` when given). */
  async image(docker: Runtime, config: Config, task?: Task): Promise<Image.ImagePlan> {
    const { image, host, raw } = this.plan(config);
    // A build of this tag under way (another launch's): wait for it, then look again.
    const under = this.building.get(image.tag);
    if (under) {
      if (task) this.event(task, "build", { image: image.tag, what: "the image another task's launch is building (waiting for it)" });
      await under;
    }
    if (image.kind === "build" && raw.kind === "build" && !(await docker.imageExists(image.tag))) {
      let done = () => {};
      this.building.set(
        image.tag,
        new Promise<void>((r) => {
          done = r;
        }),
      );
      try {
        await this.buildImage(docker, config, image, raw.dockerfile, host, task);
      } finally {
        this.building.delete(image.tag);
        done();
      }
    }
    return image;
  }

  private async buildImage(
    docker: Runtime,
    config: Config,
    image: Extract<Image.ImagePlan, { kind: "build" }>,
    approved: string,
    host: HostNet.HostNetwork,
    task?: Task,
  ): Promise<void> {
    // What runs at build is what the person approved (config/trust.ts): the Dockerfile as
    // written, before lazy adds the host's CA steps.
    if (config.container.dockerfile) Trust.checkDockerfile(this.d.root, config.container.dockerfile, approved);
    if (task) this.event(task, "build", { image: image.tag, what: image.what });
    this.d.log.info(`building ${image.what} as ${image.tag}${HostNet.describe(host)}`);
    const files = image.context ? Image.contextOf(image.context, image.dockerfile) : { Dockerfile: image.dockerfile };
    if (host.ca) files[HostNet.CA_CONTEXT_NAME] = host.ca.pem;
    let last = 0;
    await docker.build(
      image.tag,
      files,
      image.buildArgs,
      (line) => {
        this.d.log.info(`build: ${line}`);
        // Every step is recorded; what a step prints only now and then, for the live line.
        const step = /^Step \d+\/\d+/.test(line);
        if (task && (step || Date.now() - last > 1000)) {
          last = Date.now();
          this.event(task, "build", step ? { progress: line } : { output: line.slice(0, 300) });
        }
      },
      // On the host's network: a company proxy often listens on the host's loopback (cntlm,
      // px), and what a build runs is what the person approved (the Dockerfile is trusted).
      "host",
    );
    if (task) this.event(task, "build", { done: image.tag });
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
    const run = this.run(task.id);
    const sameProfile = run.profile === profile.name;
    let resume = message !== undefined && sameProfile ? (run.session ?? undefined) : undefined;
    // A turn killed before the harness saved its transcript (its container stopped from inside)
    // leaves a session that cannot be resumed: the next turn starts a new one, and says so.
    if (resume && Harness.sessionSaved(profile.harness, join(this.taskDir(task), "harness"), resume) === false) {
      this.event(task, "refused", {
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
    for (const [rel, content] of Object.entries(prepared.files)) AgentDir.write(join(this.taskDir(task), "harness"), rel, content, { uid });
    // The supervisor makes the turn's folder inside the container; whatever the agent put at
    // that name beforehand is moved aside, and a link there refuses the turn.
    const n = run.turn + 1;
    this.clearTurnDir(task, n);
    // A message answers the agent's question, if it asked one.
    this.save(task.id, {
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
    box: { id: string; g: Git.TaskGit },
    turn: { n: number; prepared: Harness.Prepared },
    message: string | undefined,
  ): Promise<Task> {
    const uid = Image.agentUid();
    const profile = this.run(task.id).profile;
    const argv = [BIN, "supervise", "--turn", `/lazy/turns/${turn.n}`, "--cwd", box.g.worktree, "--", ...turn.prepared.command];
    // Refused here, with its cause, rather than by the exec after the task went running.
    const tooLong = argvProblem(argv);
    if (tooLong) throw new LazyError("launch_refused", tooLong);
    task = this.move(task, "running", { turn: turn.n, profile, ...(message !== undefined ? { message } : {}) });
    if (message !== undefined) this.event(task, "user", { text: message });
    if (docker.remote) await Remote.shipHarness(docker, box.id, turn.prepared.files, uid);
    const execId = await docker.execDetached(
      box.id,
      argv,
      { ...containerEnv(this.d.root), ...this.netEnv, ...turn.prepared.env },
      `${uid}:${uid}`,
    );
    this.turns.follow(task, execId);
    if (docker.remote) this.remote.mirror(task, box.id, turn.n);
    return task;
  }

  /**
   * The task's git layout from lazy's records, making the worktree on the first turn. Tasks
   * from before the record existed get the name git gives a worktree (its folder's name).
   */
  private taskGit(task: Task, agentUid: number | null): Git.TaskGit {
    const run = this.run(task.id);
    const worktree = this.worktree(task);
    const admin = run.admin ?? Git.legacyAdmin(this.d.root, worktree);
    const g = Git.ensureWorktree(this.d.root, worktree, this.taskDir(task), this.ref(task), agentUid, admin);
    const recorded = g.adminDir === Git.adminDirOf(this.taskDir(task)) ? g.adminDir : basename(g.adminDir);
    if (run.admin !== recorded) this.save(task.id, { admin: recorded });
    return g;
  }

  /** The task's git layout as recorded, touching nothing; undefined when it has none. */
  private recordedGit(task: Task): Git.TaskGit | undefined {
    const run = this.run(task.id);
    const admin = run.admin ?? Git.legacyAdmin(this.d.root, this.worktree(task));
    return admin ? Git.layout(this.d.root, this.worktree(task), this.taskDir(task), this.ref(task), admin) : undefined;
  }

  private clearTurnDir(task: Task, turn: number): void {
    const turns = join(this.taskDir(task), "turns");
    const st = AgentDir.lstat(turns, String(turn));
    if (!st) return;
    if (st.isDirectory()) {
      AgentDir.rename(turns, String(turn), `${turn}.stale-${Date.now()}`);
      return;
    }
    AgentDir.unlink(turns, String(turn));
    this.event(task, "refused", {
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
  workspace(ref: string): {
    task: Task;
    worktree: string;
    configDir: string;
    session: string | null;
    profile: string;
    git: { dir: string; commonDir: string };
  } {
    const task = Tasks.resolve(this.d.db, ref);
    if (isFinal(task.status)) throw new LazyError("conflict", `Task ${this.ref(task)} is ${task.status}; its worktree is gone.`);
    // A remote engine's task works in its container's copy; the host's is not kept up to date.
    const ep = Engine.resolve();
    if (Engine.isRemote(ep))
      throw new LazyError(
        "conflict",
        `Task ${this.ref(task)} runs on the Docker engine at ${ep.host}, where its worktree is; the host's copy is not kept up to date, so a pair would work on stale files. Its commits are on ${Git.BRANCH_PREFIX}${this.ref(task)}: check that branch out yourself, or run lazy without DOCKER_HOST for a local task.`,
      );
    const worktree = this.worktree(task);
    const g = this.recordedGit(task);
    if (!g || !existsSync(worktree))
      throw new LazyError("conflict", `Task ${this.ref(task)} has no worktree yet: lazy start ${this.ref(task)} makes it.`);
    // Host-side git in this folder must find the project's repository, not what the agent named.
    Git.restorePointers(g);
    const run = this.run(task.id);
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

  /**
   * Stop a running turn: the harness gets SIGTERM through lazy's own binary in the container
   * (any image; no kill binary needed). Who stopped it is lazy's record, not a file the agent
   * could plant or point elsewhere.
   */
  async stop(ref: string, by = "user"): Promise<Task> {
    const task = Tasks.resolve(this.d.db, ref);
    if (task.status !== "running") throw new LazyError("conflict", `Task ${this.ref(task)} is ${task.status}, not running.`);
    const run = this.run(task.id);
    this.save(task.id, { stopped_turn: run.turn });
    // Nothing could be signalled (no process can start in a container at its pids limit, or the
    // harness is gone): the container is stopped whole, and the turn ends as stopped.
    if (!(await this.turns.signal(run, `task ${this.ref(task)}`))) {
      this.d.log.warn(`task ${this.ref(task)}: stopping its container, since its harness could not be signalled`);
      const left = await this.halt(task);
      if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
    }
    this.event(task, "stop", { by });
    return task;
  }

  /**
   * A turn ended (or a container runs with no turn): stop the task's container so nothing the
   * agent started runs on, and check it stopped (Runtime.halt kills harder when it did not).
   * Stopping it whole is what holds: the agent has root in its container, so a process-by-process
   * kill can be raced by a forking loop; its pid namespace ends with its init. The next turn
   * starts the same container again. What is still wrong, if anything.
   */
  private async halt(task: Task): Promise<string | undefined> {
    const id = this.run(task.id).container_id;
    if (!id) return undefined;
    const docker = await this.docker();
    if (!(await docker.inspect(id))?.running) return undefined;
    // Its address stops redeeming first: once it stops, Docker may give it to another container.
    await this.d.proxy.unpinTask(task.id);
    this.d.mcp.unpin(task.id);
    return docker.halt(id);
  }

  /**
   * Merge the task's branch with a summary of the work, end the session (endings.ts). A
   * best-of-N candidate's accept closes the other candidates (their branches kept); it waits
   * for none of them, so one still running is refused, naming it.
   */
  async accept(ref: string, opts: { withConfig?: boolean } = {}): Promise<Awaited<ReturnType<Endings["accept"]>> & { closed: string[] }> {
    const task = Tasks.resolve(this.d.db, ref);
    const others = this.groups.others(task);
    const busy = others.filter((t) => t.status === "running" || this.starting.has(t.id));
    if (busy.length)
      throw new LazyError(
        "conflict",
        `Accepting ${this.ref(task)} closes the other candidates of group ${task.group}, and ${busy.map((t) => this.ref(t)).join(", ")} ${busy.length > 1 ? "are" : "is"} still running: wait for ${busy.length > 1 ? "them" : "it"}, or lazy stop ${busy.map((t) => this.ref(t)).join(" ")}, then accept again.`,
      );
    const r = await this.endings.accept(ref, opts);
    const closed: string[] = [];
    for (const o of others)
      try {
        await this.endings.close(o.id, `group ${task.group}: ${this.ref(task)} was accepted`);
        closed.push(this.ref(o));
      } catch (e) {
        this.d.log.warn(`group ${task.group}: could not close ${this.ref(o)}: ${(e as Error).message}`);
      }
    return { ...r, closed };
  }

  reject(ref: string): Promise<Task> {
    return this.endings.reject(ref);
  }

  close(ref: string): Promise<Task> {
    return this.endings.close(ref);
  }

  /**
   * Keep statuses honest: a running task whose turn ended is settled, one whose container is gone
   * fails, and containers of ended or unknown tasks are removed. Runs at start and periodically.
   */
  async reconcile(): Promise<void> {
    let docker: Runtime;
    try {
      docker = await this.docker();
    } catch {
      return; // no engine: nothing to reconcile against; doctor says so
    }
    const all = await docker.list(this.d.slug);
    // lazy's own calls in flight are not a task's; one left by a daemon that died is an orphan.
    const containers = all.filter((c) => !this.calls.isCall(c.name));
    const orphans = all.filter((c) => this.calls.isCall(c.name) && !this.calls.active.has(c.name));
    for (const c of orphans) await docker.remove(c.id);
    // Their folders too, once the containers are gone (not before: a live one could still write there).
    const left = orphans.length ? await docker.list(this.d.slug) : all;
    this.calls.sweep(new Set(left.map((c) => c.name)));
    const running = Tasks.list(this.d.db, { status: "running" });
    // Containers that outlived a daemon still talk to the proxy at the network's gateway, and
    // their network's firewall rules are put back if Docker or a firewall reload flushed them
    // (or taken away when the config now allows metadata).
    let hijacked: string | undefined;
    if (containers.some((c) => c.running) && !this.starting.size) {
      let gateway: string | undefined;
      try {
        const net = await docker.ensureNetwork(this.d.slug, this.networkOptions(this.d.config()));
        this.noteGuard(net.guard);
        this.noteFence(net.fence);
        gateway = net.gateway;
      } catch (e) {
        this.d.log.error(`the project's network: ${(e as Error).message}`);
        // Setting its fence asks the proxy to listen there: the same refusal as below.
        if ((e as LazyError).code === "proxy_unavailable") hijacked = (e as Error).message;
      }
      // A remote engine's gateway is not this host's: its containers reach [proxy] remote_bind.
      const at = docker.remote ? this.d.config().proxy.remote_bind : gateway;
      if (at && docker.kind !== "desktop")
        try {
          await this.d.proxy.listenFor(at);
        } catch (e) {
          this.d.log.error(`the proxy cannot listen for the project's containers: ${(e as Error).message}`);
          // Their proxy address is another process's now: their turns end here rather than be
          // answered by it (proxy/index.ts listenFor).
          if ((e as LazyError).code === "proxy_unavailable") hijacked = (e as Error).message;
        }
    }
    for (const task of running) {
      if (this.turns.has(task.id) || this.starting.has(task.id)) continue;
      const c = containers.find((x) => x.taskId === task.id);
      if (this.turns.poll(task.id)) continue;
      if (!c?.running) {
        this.move(task, "failed", { error: "the task's container is gone" });
        continue;
      }
      if (hijacked) {
        await this.d.proxy.unpinTask(task.id);
        this.d.mcp.unpin(task.id);
        const left = await docker.halt(c.id);
        if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
        this.move(task, "failed", { error: hijacked });
        this.d.proxy.release(task.id, "turn");
        continue;
      }
      this.turns.watch(task);
      if (docker.remote) this.remote.mirror(task, c.id, this.run(task.id).turn);
    }
    for (const c of containers) {
      let task: Task | undefined;
      try {
        task = c.taskId ? Tasks.resolve(this.d.db, c.taskId) : undefined;
      } catch {}
      if (!task || isFinal(task.status)) {
        this.d.log.info(`removing orphan container ${c.name}`);
        await docker.remove(c.id);
      } else if (c.running && task.status !== "running" && !this.starting.has(task.id) && !this.turns.has(task.id)) {
        // No turn runs, so nothing of the agent's may (a turn that ended while no daemon watched,
        // or a container from before turns stopped theirs).
        const now = Tasks.resolve(this.d.db, task.id);
        if (now.status === "running" || this.starting.has(task.id)) continue;
        this.d.log.warn(`task ${this.ref(task)} has no running turn but its container runs: stopping it`);
        await this.d.proxy.unpinTask(task.id);
        this.d.mcp.unpin(task.id);
        const left = await docker.halt(c.id);
        if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
      }
    }
    await this.dropIdleNetwork().catch((e) => this.d.log.warn(`could not remove the project's idle network: ${(e as Error).message}`));
  }

  private async dropIdleNetwork(): Promise<void> {
    // A turn or a call being set up is about to use it (asked again after the list: one may have
    // begun meanwhile; Docker itself refuses to remove a network a container is on).
    if (this.starting.size || this.calls.busy) return;
    const docker = await this.docker();
    if ((await docker.list(this.d.slug)).length || this.starting.size || this.calls.busy) return;
    const gateway = await docker.removeNetwork(this.d.slug, this.networkOptions(this.d.config()));
    if (gateway) this.d.proxy.unlisten(gateway);
    if (gateway) this.d.egress.unlisten(gateway);
  }

  /**
   * lazy daemon stop: nothing of the project runs after it. Task containers are stopped, not
   * removed (the next turn docker-starts one, its disk as the agent left it: installed packages
   * stay), and the project's network goes: a stopped container holds no address, and Docker
   * attaches it to the network made anew when it starts again. Called after shutdown().
   */
  async quiesce(): Promise<void> {
    let docker: Runtime;
    try {
      docker = await this.docker();
    } catch {
      return; // no engine: nothing of ours runs on it
    }
    for (const c of await docker.list(this.d.slug)) {
      if (!c.running) continue;
      if (c.taskId) await this.d.proxy.unpinTask(c.taskId);
      if (c.taskId) this.d.mcp.unpin(c.taskId);
      const left = await docker.halt(c.id);
      if (left) this.d.log.error(`at stop: ${left}`);
    }
    // A turn it cut is over, said as such (not "its container is gone" from the next daemon).
    for (const task of Tasks.list(this.d.db, { status: "running" })) {
      this.move(task, "failed", { error: `lazy daemon stop ended this turn; lazy start ${this.ref(task)} runs it again` });
      this.d.proxy.release(task.id, "turn");
    }
    const gateway = await docker.removeNetwork(this.d.slug, this.networkOptions(this.d.config()));
    if (gateway) this.d.log.info(`removed the project's network (gateway ${gateway})`);
  }

  startHousekeeping(everyMs = 15_000): void {
    this.holds.schedule(); // turns held before a restart start when their window resets
    this.budgets.start();
    void this.reconcile().catch((e) => this.d.log.error(`reconcile: ${(e as Error).message}`));
    this.housekeeping = setInterval(
      () => void this.reconcile().catch((e) => this.d.log.error(`reconcile: ${(e as Error).message}`)),
      everyMs,
    );
    this.housekeeping.unref();
  }

  shutdown(): void {
    clearInterval(this.housekeeping);
    this.holds.stop();
    this.budgets.stop();
    this.turns.stopAll();
  }
}
export { MAX_CANDIDATES, CHECK_TIMEOUT_MS, type NewGroup } from "./groups";
