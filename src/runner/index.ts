/**
 * The task lifecycle, wired: a task is added (alone or as a best-of-N group), its turns start
 * (launch.ts), run and settle (turn-watch.ts), and its session ends (endings.ts); housekeeping
 * keeps statuses honest against Docker (reconcile.ts). Every step records through one ledger
 * (ledger.ts); the task's files are workspace.ts's, and the project's Docker side (engine,
 * network, image) is containers/'s.
 */
import type { Database } from "bun:sqlite";
import type { Broker } from "../broker";
import type { Bus } from "../bus";
import { Groups, type NewGroup } from "../compare";
import { type Config, defaultProfile, resolveProfile } from "../config";
import { type Engine, ProjectContainers } from "../containers";
import type { Egress } from "../egress";
import type { Heard, McpTokens } from "../mcp";
import type { Fence, LinkLocalGuard } from "../network";
import { Compactor, OwnCalls } from "../own-calls";
import { harnessesOf, Preflight } from "../preflight";
import type { ModelProxy } from "../proxy";
import { RemoteTasks } from "../remote";
import { Budgets, Holds } from "../spending";
import { Runs, type Task, Tasks } from "../store";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { DiskBound } from "./disk-bound";

import { type Actor, Endings } from "./endings";
import { Launcher } from "./launch";

import { Ledger } from "./ledger";
import { traceTurn } from "./provenance";
import { type PruneResult, Pruner } from "./prune";
import { Reconciler } from "./reconcile";
import type { Lifecycle, TaskAccess } from "./task-access";
import { TurnQueue } from "./turn-queue";
import { TurnWatch } from "./turn-watch";
import { type PairWorkspace, Workspaces } from "./workspace";

export interface RunnerDeps {
  root: string;
  slug: string;
  stateDir: string;
  db: Database;
  proxy: ModelProxy;
  /** The grant registry's MCP tokens (a launch hands the task's to its harness); revoked and pinned with its placeholders. */
  mcp: Pick<McpTokens, "forTask">;
  config: () => Config;
  bus: Bus;
  log: Logger;
  /** The egress proxy: the fence's ports, and the proxy variables a fenced container gets. */
  egress: Pick<Egress, "fenceFor" | "envFor" | "unlisten">;
  /** The broker: a task's placeholders for brokered services, and the CA bundle that trusts its terminator. */
  broker?: Pick<Broker, "forTask" | "bundle">;
  /** When lazy's MCP route last heard from a task's token, and what it refused then (mcp lastHeard). */
  mcpHeard?: (taskId: string) => { last: Heard | undefined; since: number };
  /** Why no turn may write now: the disk holding lazy's state is under its floor (disk/reserve.ts). */
  diskLow?: () => string | undefined;
  /**
   * The refusal of lazy.toml as it is on disk now, when it changed and is not trusted (the daemon
   * keeps the last trusted config meanwhile): nothing new is added or started on the strength of
   * it, as no daemon would start for it (one trust rule, daemon or not).
   */
  untrusted?: () => LazyError | undefined;
}

export class Runner {
  private housekeeping: Timer | undefined;
  /** Tasks whose turn (or check) is being set up: no second turn starts, housekeeping leaves their containers be. */
  private starting = new Set<string>();
  /** A task's status moves and events, recorded and published (ledger.ts); the MCP tools record through it too. */
  readonly ledger: Ledger;
  /** The task's folders, worktree and git layout (workspace.ts). */
  private ws: Workspaces;
  /** The project's engine connection, network and image (containers/project.ts). */
  private project: ProjectContainers;
  /** What a launch needs, checked before a task is stored or a turn starts (src/preflight). */
  private preflight: Preflight;
  private launcher: Launcher;
  private reconciler: Reconciler;
  private holds: Holds;
  /** [limits] max_running: turns past it, queued (turn-queue.ts). */
  private queue: TurnQueue;
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
  /** Tasks on a remote engine: shipping in, mirroring and bringing back (remote-tasks.ts). */
  private remote: RemoteTasks;
  /** [container.limits] disk: what running tasks fill, watched (disk-bound.ts). */
  readonly disk: DiskBound;
  /** lazy prune: what ended tasks and old builds left (prune.ts). */
  private pruner: Pruner;

  constructor(private d: RunnerDeps) {
    this.ledger = new Ledger({
      db: d.db,
      bus: d.bus,
      release: (id) => d.proxy.release(id, "turn"),
      ended: () => void this.queue?.next(),
    });
    const { ledger } = this;
    this.ws = new Workspaces({ root: d.root, slug: d.slug, stateDir: d.stateDir, db: d.db, ledger });
    this.project = new ProjectContainers({
      root: d.root,
      slug: d.slug,
      stateDir: d.stateDir,
      log: d.log,
      config: d.config,
      proxy: d.proxy,
      egress: d.egress,
    });
    const docker = () => this.project.docker();
    this.preflight = new Preflight({ root: d.root, stateDir: d.stateDir, docker, endpoint: () => this.project.engineEndpoint() });
    this.remote = new RemoteTasks({
      slug: d.slug,
      stateDir: d.stateDir,
      log: d.log,
      docker,
      ledger,
      taskDir: this.ws.taskDir,
      recordedGit: this.ws.recordedGit,
      following: (id) => this.turns.has(id),
      turnOf: (id) => Runs.get(d.db, id).turn,
      containerOf: (id) => Runs.get(d.db, id).container_id,
    });
    this.calls = new OwnCalls({
      root: d.root,
      slug: d.slug,
      stateDir: d.stateDir,
      db: d.db,
      proxy: d.proxy,
      config: d.config,
      log: d.log,
      project: this.project,
      ledger,
      remote: this.remote.calls,
    });
    this.memory = new Compactor(d.db, this.calls, d.log);
    this.budgets = new Budgets({ db: d.db, config: d.config, proxy: d.proxy, log: d.log, move: ledger.move, ref: ledger.ref });
    // What turn-watch.ts and endings.ts borrow of the runner (task-access.ts).
    const access: TaskAccess = {
      root: d.root,
      db: d.db,
      log: d.log,
      docker,
      ledger,
      taskDir: this.ws.taskDir,
      recordedGit: this.ws.recordedGit,
    };
    this.turns = new TurnWatch({
      ...access,
      config: d.config,
      budgets: this.budgets,
      release: (id) => d.proxy.release(id, "turn"),
      halt: (t) => this.reconciler.halt(t),
      bringBack: (t) => this.remote.bringBack(t),
      readTurn: (t, id, turn) => this.remote.readTurn(t, id, turn),
      heard: (id) => d.mcpHeard?.(id) ?? { last: undefined, since: 0 },
      trace: (t, turn, from, to) => traceTurn({ root: d.root, db: d.db, log: d.log, config: d.config, proxy: d.proxy }, t, turn, from, to),
    });
    // A daemon restarted mid-turn: those turns' grants redeem until their turns end.
    for (const t of Tasks.list(d.db, { status: "running" }))
      void d.proxy.hold(t.id, "turn").catch((e: unknown) => d.log.warn(`task ${t.id}'s grant: ${(e as Error).message}`));
    // What housekeeping and launching both take.
    const lifecycle: Lifecycle = {
      slug: d.slug,
      db: d.db,
      log: d.log,
      config: d.config,
      proxy: d.proxy,
      ledger,
      project: this.project,
      remote: this.remote,
      starting: this.starting,
    };
    this.reconciler = new Reconciler({ ...lifecycle, egress: d.egress, turns: () => this.turns, calls: this.calls });
    this.disk = new DiskBound({
      db: d.db,
      log: d.log,
      config: d.config,
      ledger,
      docker,
      stateDir: d.stateDir,
      taskDir: this.ws.taskDir,
      worktree: this.ws.worktree,
      halt: (t) => this.reconciler.halt(t),
      low: () => d.diskLow?.(),
    });
    this.endings = new Endings({
      ...access,
      slug: d.slug,
      proxy: d.proxy,
      calls: this.calls,
      dropIdleNetwork: () => this.reconciler.dropIdleNetwork(),
      config: d.config,
    });
    this.pruner = new Pruner({
      ...lifecycle,
      root: d.root,
      docker,
      calls: this.calls,
      taskDir: this.ws.taskDir,
      worktree: this.ws.worktree,
      dropIdleNetwork: () => this.reconciler.dropIdleNetwork(),
    });
    this.holds = new Holds({
      db: d.db,
      proxy: d.proxy,
      config: d.config,
      log: d.log,
      move: ledger.move,
      event: ledger.event,
      start: (id, message) => this.start(id, message),
      ref: ledger.ref,
    });
    this.queue = new TurnQueue({
      db: d.db,
      log: d.log,
      config: d.config,
      ledger,
      starting: this.starting,
      start: (id, message) => this.launcher.start(id, message, true),
    });
    this.launcher = new Launcher({
      ...lifecycle,
      queue: () => this.queue,
      mcp: d.mcp,
      root: d.root,
      ws: this.ws,
      turns: this.turns,
      holds: () => this.holds,
      budgets: this.budgets,
      disk: this.disk,
      broker: d.broker,
      preflight: this.preflight,
    });
    this.groups = new Groups({
      root: d.root,
      slug: d.slug,
      db: d.db,
      log: d.log,
      config: d.config,
      project: this.project,
      ledger,
      busy: (t, fn) => this.launcher.busy(t, fn),
    });
  }

  /** Where this daemon's containers run: the engine it connected to, or, before that, the one it would. */
  engineEndpoint(): Engine.Endpoint {
    return this.project.engineEndpoint();
  }

  /** The link-local guard's state, for lazy doctor; undefined until a network was ensured. */
  metadataGuard(): LinkLocalGuard | undefined {
    return this.project.metadataGuard();
  }

  /** The network fence's state, for lazy doctor; undefined until a network was ensured. */
  fenceState(): Fence.State | undefined {
    return this.project.fenceState();
  }

  private ref(t: Task): string {
    return this.ledger.ref(t);
  }

  /** Refused while lazy.toml changed and is not trusted: what a person or agent asks to add or start. */
  mustTrust(): void {
    const e = this.d.untrusted?.();
    if (e) throw e;
  }

  /**
   * Add a task (the CLI, the dashboard, a builder session): its profile must exist, and the
   * preflight must pass (src/preflight) — a refused launch stores nothing.
   */
  async add(input: { prompt: string; title?: string; code?: string; profile?: string }): Promise<Task> {
    this.mustTrust();
    const config = this.d.config();
    const profile = input.profile ?? defaultProfile(config);
    resolveProfile(config, profile);
    await this.preflight.launch(config, harnessesOf(config, [profile]));
    const task = Tasks.add(this.d.db, { ...input, profile });
    this.ledger.changed(task);
    return task;
  }

  /** Add a best-of-N group: one candidate task per profile, from one prompt (compare/groups.ts), after the preflight of every profile. */
  async addGroup(input: NewGroup): Promise<{ group: string; tasks: Task[] }> {
    this.mustTrust();
    const config = this.d.config();
    await this.preflight.launch(config, harnessesOf(config, input.profiles));
    const r = this.groups.add(input);
    for (const t of r.tasks) this.ledger.changed(t);
    return r;
  }

  /**
   * Before a best-of-N run makes its group: every profile's credential is there, or the whole
   * group is refused (each missing one named, with its lazy auth set), before any candidate is
   * made or launched.
   */
  groupReady(profiles: readonly string[]): void {
    this.mustTrust();
    const config = this.d.config();
    for (const p of profiles) resolveProfile(config, p);
    const refusals = [...new Set(profiles)].map((p) => this.d.proxy.credentialMissing(p)).filter((e) => e !== null);
    if (!refusals.length) return;
    throw LazyError.of(refusals[0]!.code, { reason: "group_credentials", missing: refusals.flatMap((e) => (e.facts ? [e.facts] : [])) });
  }

  /**
   * Start the task's next turn: the first prompt, or a follow-up message (launch.ts). The
   * preflight comes first: refused there, the task is left as it was (not failed).
   */
  async start(ref: string, message?: string): Promise<Task> {
    this.mustTrust();
    const task = Tasks.resolve(this.d.db, ref);
    const config = this.d.config();
    await this.preflight.launch(config, harnessesOf(config, [task.profile]));
    return this.launcher.start(ref, message);
  }

  /** Where a host session (lazy pair) works on the task: its worktree, harness folder and session. */
  workspace(ref: string): PairWorkspace {
    return this.ws.forPair(ref);
  }

  /**
   * Stop a running turn: the harness gets SIGTERM through lazy's own binary in the container
   * (any image; no kill binary needed). Who stopped it is lazy's record, not a file the agent
   * could plant or point elsewhere.
   */
  async stop(ref: string, by = "user"): Promise<Task> {
    const task = Tasks.resolve(this.d.db, ref);
    const dropped = this.queue.drop(task, by);
    if (dropped) return dropped;
    if (task.status !== "running") throw new LazyError("conflict", `Task ${this.ref(task)} is ${task.status}, not running.`);
    const run = Runs.get(this.d.db, task.id);
    Runs.save(this.d.db, task.id, { stopped_turn: run.turn });
    // Nothing could be signalled (no process can start in a container at its pids limit, or the
    // harness is gone): the container is stopped whole, and the turn ends as stopped.
    if (!(await this.turns.signal(run, `task ${this.ref(task)}`))) {
      this.d.log.warn(`task ${this.ref(task)}: stopping its container, since its harness could not be signalled`);
      const left = await this.reconciler.halt(task);
      if (left) this.d.log.error(`task ${this.ref(task)}: ${left}`);
    }
    this.ledger.event(task, "stop", { by });
    return task;
  }

  /**
   * Merge the task's branch with a summary of the work, end the session (endings.ts). A
   * best-of-N candidate's accept closes the other candidates (their branches kept); it waits
   * for none of them, so one still running is refused, naming it.
   */
  async accept(
    ref: string,
    opts: { withConfig?: boolean; tip?: string; by?: Actor } = {},
  ): Promise<Awaited<ReturnType<Endings["accept"]>> & { closed: string[] }> {
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
        await this.endings.close(o.id, `group ${task.group}: ${this.ref(task)} was accepted`, opts.by);
        closed.push(this.ref(o));
      } catch (e) {
        this.d.log.warn(`group ${task.group}: could not close ${this.ref(o)}: ${(e as Error).message}`);
      }
    return { ...r, closed };
  }

  reject(ref: string, by?: Actor): Promise<Task> {
    return this.endings.reject(ref, by);
  }

  /** lazy prune: ended tasks' containers and folders, unused images lazy built (prune.ts); `dryRun` only lists them. */
  prune(opts: { dryRun: boolean }): Promise<PruneResult> {
    return this.pruner.prune(opts);
  }

  close(ref: string, by?: Actor): Promise<Task> {
    return this.endings.close(ref, undefined, by);
  }

  /** Keep statuses honest against Docker (reconcile.ts); runs at start and periodically. */
  reconcile(): Promise<void> {
    return this.reconciler.reconcile();
  }

  /** lazy daemon stop: nothing of the project runs after it (reconcile.ts). Called after shutdown(). */
  quiesce(): Promise<void> {
    return this.reconciler.quiesce();
  }

  startHousekeeping(everyMs = 15_000): void {
    this.holds.schedule(); // turns held before a restart start when their window resets
    this.budgets.start();
    this.disk.start();
    // Turns queued before a restart, or behind a max_running since raised, start as slots free.
    const sweep = () => {
      void this.reconcile()
        .catch((e) => this.d.log.error(`reconcile: ${(e as Error).message}`))
        .then(() => this.queue.next());
    };
    sweep();
    this.housekeeping = setInterval(sweep, everyMs);
    this.housekeeping.unref();
  }

  shutdown(): void {
    clearInterval(this.housekeeping);
    this.holds.stop();
    this.budgets.stop();
    this.disk.stop();
    this.turns.stopAll();
  }
}
export { CHECK_TIMEOUT_MS, MAX_CANDIDATES, type NewGroup } from "../compare";
export type { Actor } from "./endings";
export type { Pruned, PruneResult } from "./prune";
