/**
 * The model proxy, always on inside the daemon: every agent's model traffic passes through it.
 * It resolves a placeholder to its grant, forwards only the model API to the upstream the
 * grant's profile points at, swaps in the real credential at the last hop, and records each
 * call (a bounded audit trail, usage-limit readings, provider health).
 *
 * The request path runs on threads of their own (thread/, request/); this class, on the
 * daemon's main thread, owns the grants and the audit trail and keeps the threads' copies of the
 * config, the credential values and the grant table current.
 */
import type { Database } from "bun:sqlite";
import { join } from "node:path";
import { type Config, type ResolvedProfile, resolveProfile } from "../../config";
import type { CredentialStore } from "../../credentials";
import * as Harness from "../../harness";
import { ownPrices } from "../../prices";
import { LazyError } from "../../util/errors";
import * as Log from "../../util/log";
import { GATEWAY_PORTS_FILE } from "../../util/paths";
import { Audit } from "../audit";
import { Grants, Live, type Role, type Target, Targets } from "../identity";
import { threadCount } from "../listen";
import { admitMcp, answerMcp, type McpHandler } from "../mcp-bridge";
import * as Plugins from "../plugins";
import { CursorSessions } from "../request";
import { type Ask, type Call, type Init, mergeStats, type Stats, Thread, type ToThread } from "../thread";
import { UPSTREAM } from "../upstream";
import { Ports } from "./ports";

export interface LaunchGrant {
  /** The variable the harness reads its credential from, holding the placeholder. */
  envVar: string;
  placeholder: string;
  target: Target;
  profile: ResolvedProfile;
}

/** Whether the proxy as a whole is up, for status and doctor. */
export type ProxyState = "starting" | "ready" | "failed";

export class ModelProxy {
  readonly grants: Grants;
  readonly audit: Audit;
  /** Cursor session placeholders, for every proxy thread (they ask for them). */
  readonly sessions = new CursorSessions();
  state: ProxyState = "starting";
  error: string | undefined;
  address: { host: string; port: number } | null = null;
  stopping = false;
  private targets: Targets;
  private threads: Thread[] = [];
  private stopped = new Map<string, string>();
  /** Tasks whose grants redeem now (live.ts). */
  private live: Live;
  private apiRoots: string[] = [];
  private mcpHandler: McpHandler | undefined;
  /** Where the threads listen (ports.ts). */
  private ports: Ports;
  /** The lazy home and project root that decide which plugin files may load; none until usePlugins. */
  private pluginPlaces: { home: string; root: string } | undefined;

  constructor(
    stateDir: string,
    private db: Database,
    private credentials: CredentialStore,
    private config: () => Config,
    readonly log = Log.create("proxy"),
    threads = threadCount(),
  ) {
    this.grants = Grants.open(stateDir, { onChange: (grants) => this.post({ type: "grants", grants }) });
    this.live = new Live(stateDir, (live) => this.post({ type: "live", live }));
    this.ports = new Ports(join(stateDir, GATEWAY_PORTS_FILE), this.threads, log, (why) => this.lost(why));
    this.targets = Targets.build(config());
    this.audit = new Audit(
      db,
      () => {
        const a = this.config().proxy.audit;
        return {
          maxRows: a.max_rows,
          maxAgeDays: a.max_age_days,
          maxRefusals: a.max_refusal_lines,
          prices: ownPrices(this.config().prices),
        };
      },
      log,
      () => this.sync(),
    );
    credentials.onChange(() => this.post({ type: "credentials", credentials: this.credentials.snapshot() }));
    // Each proxy thread reads LAZY_UPSTREAM itself as it starts (upstream/client.ts); said here once.
    if (UPSTREAM.problem) log.warn(UPSTREAM.problem);
    if (UPSTREAM.fetch) log.info("upstream requests go through fetch, not lazy's own HTTP client (LAZY_UPSTREAM=fetch)");
    for (let i = 0; i < threads; i++) this.threads.push(new Thread(this));
  }

  /** What a new proxy thread starts from. */
  init(): Init {
    return {
      config: this.config(),
      credentials: this.credentials.snapshot(),
      grants: this.grants.all(),
      stopped: Object.fromEntries(this.stopped),
      live: this.live.list(),
      apiRoots: this.apiRoots,
      dbPath: this.db.filename,
      log: Log.settings(),
      plugins: this.pluginSpecs(this.config()),
    };
  }

  /** Load `[[proxy.plugins]]` from under `home` (never from `root`), now and at each reconfigure. */
  usePlugins(places: { home: string; root: string }): void {
    this.pluginPlaces = places;
    const specs = this.pluginSpecs(this.config());
    for (const s of specs) if ("refused" in s) this.log.error(`request plugin ${s.name} is not loaded: ${s.refused}`);
    this.post({ type: "plugins", plugins: specs });
  }

  private pluginSpecs(config: Config): Plugins.Spec[] {
    return this.pluginPlaces ? Plugins.resolve(config.proxy.plugins, this.pluginPlaces.home, this.pluginPlaces.root) : [];
  }

  /** A proxy thread asks for Cursor session placeholders. */
  answer(a: Ask): unknown {
    if (a.op === "mcp-admit") return admitMcp(this.mcpHandler, this.log, a.token, a.from);
    if (a.op === "mcp") return answerMcp(this.mcpHandler, this.log, a);
    if (a.op === "swap") return this.sessions.swapOut(a.real, a.grant);
    return this.sessions.pairs(a.grantToken);
  }

  /** A thread was given up on: the proxy is only whole with all of them. */
  lost(why: string): void {
    this.state = "failed";
    this.error = why;
  }

  /** A restarted thread listens where the others do: on those ports or not at all (the addresses agents were given). */
  rejoin(t: Thread): Promise<void> {
    return this.ports.rejoin(t);
  }

  private post(m: ToThread): void {
    for (const t of this.threads) t.post(m);
  }

  private all<T>(c: Call): Promise<T[]> {
    return Promise.all(this.threads.map((t) => t.call<T>(c)));
  }

  /** `port`: where to start looking (the configured port, or where the daemon before listened). */
  async start(port = this.config().proxy.port): Promise<void> {
    const c = this.config();
    const r = await this.ports.listen(c.proxy.bind, port);
    this.address = r.address;
    this.state = r.address ? "ready" : "failed";
    this.error = r.error;
  }

  /** Resolves once every proxy thread has applied everything posted before, and handed over its audit rows. */
  async sync(): Promise<void> {
    await this.all({ op: "sync" });
  }

  /** Usage-limit readings, provider health and rejected OAuth tokens, as of now, over every thread. */
  async stats(): Promise<Stats> {
    return mergeStats(await this.all<Stats>({ op: "stats" }));
  }

  /**
   * Stop a task's turns at their next request (`message` says why: a budget reached), or let
   * them through again (null). "*" stands for every task (today's project budget).
   */
  stopTask(taskId: string, message: string | null): void {
    if (message === null ? !this.stopped.delete(taskId) : this.stopped.get(taskId) === message) return;
    if (message !== null) this.stopped.set(taskId, message);
    this.post({ type: "stopped", stopped: Object.fromEntries(this.stopped) });
  }

  /**
   * A task's placeholder (and MCP token) redeems from now on, while `holder` runs (its turn, or
   * one of lazy's own calls about it). Resolves once every proxy thread knows: call it before
   * the harness starts.
   */
  hold(taskId: string, holder: string): Promise<void> {
    this.live.hold(taskId, holder);
    return this.sync();
  }

  /** `holder` ended: with nothing else holding it, the task's placeholder is refused 401, saying why. */
  release(taskId: string, holder: string): void {
    this.live.release(taskId, holder);
  }

  /** A task's grant also redeems while host process `pid` lives (the API's agent grant: scripts, tests). */
  async holdWhile(taskId: string, pid: number): Promise<void> {
    this.live.holdWhile(taskId, pid);
    await this.sync();
  }

  /** Whether a turn or one of lazy's own calls about the task runs (its grants redeem). */
  isLive(taskId: string): boolean {
    return this.live.has(taskId);
  }

  /** Why a task's turns are stopped, if they are. */
  stoppedFor(taskId: string): string | undefined {
    return this.stopped.get(taskId) ?? this.stopped.get("*");
  }

  /** The daemon API's roots: the proxy's listeners answer 404 for them (listen/roots.ts). */
  notServed(roots: string[]): void {
    this.apiRoots = roots;
    this.post({ type: "api-roots", roots });
  }

  /** Who answers lazy's MCP route (the daemon wires the MCP server here). */
  serveMcp(handler: McpHandler): void {
    this.mcpHandler = handler;
  }

  /** The credential slot a profile's traffic bills (null: none, or an unknown profile). */
  credentialFor(profile: string): string | null {
    return this.targets.forProfile(profile)?.credential ?? null;
  }

  /** A credential was stored again: forget that its provider rejected the old one. */
  async clearProblem(name: string): Promise<void> {
    await this.all({ op: "clear-problem", name });
  }

  /** A new config: rebuild the credential map (the caller validated it with Targets.build first). */
  reconfigure(config: Config): void {
    this.targets = Targets.build(config);
    this.post({ type: "config", config });
    if (this.pluginPlaces) this.usePlugins(this.pluginPlaces);
  }

  /**
   * Why a launch on `profileName` would be refused for its credential (the refusal itself, naming
   * the profile and `lazy auth set`), or null when its credential is there. Checks only: mints nothing.
   */
  credentialMissing(profileName: string): LazyError | null {
    const profile = resolveProfile(this.config(), profileName);
    const target = this.targets.forProfile(profile.name);
    if (!target) return new LazyError("invalid_input", `No profile "${profileName}".`);
    if (target.unmapped)
      return LazyError.of("credential_missing", {
        reason: "credential_unmapped",
        profile: profile.name,
        provider: target.provider,
        why: target.unmapped,
      });
    if (target.credential && !this.credentials.get(target.credential))
      return LazyError.of("credential_missing", { reason: "credential_not_stored", profile: profile.name, credential: target.credential });
    return null;
  }

  /**
   * The placeholder for a launch: minted per (role, task, profile, env var), shaped like the
   * real credential it stands for, in the variable the harness reads. A profile whose
   * credential is missing fails here, before anything starts, naming the slot and the fix.
   * Resolves once the proxy's threads know the placeholder.
   */
  async mintFor(opts: {
    role: Role;
    profile: string;
    taskId?: string | null;
    taskRef?: string | null;
    session?: string | null;
  }): Promise<LaunchGrant> {
    const profile = resolveProfile(this.config(), opts.profile);
    const missing = this.credentialMissing(profile.name);
    if (missing) throw missing;
    const target = this.targets.forProfile(profile.name)!;
    const cred = target.credential ? this.credentials.get(target.credential) : undefined;
    const { envVar, shape } = Harness.slot(profile, {
      bearer: target.style === "bearer" && !!target.credential,
      openrouter: target.credential === "openrouter",
      kind: cred?.kind ?? null,
    });
    const grant = this.grants.mint({
      role: opts.role,
      taskId: opts.taskId ?? null,
      taskRef: opts.taskRef ?? null,
      session: opts.session ?? null,
      profile: profile.name,
      envVar,
      shape,
    });
    await this.sync();
    return { envVar, placeholder: grant.token, target, profile };
  }

  /** Accept this placeholder (an agent's: and its task's MCP token) only from `ip` from now on; resolves once the proxy's threads do. */
  async pin(token: string, ip: string): Promise<void> {
    this.grants.pin(token, ip);
    await this.sync();
  }

  /** The task's container is stopping: its address no longer redeems the task's placeholders or MCP token. */
  async unpinTask(taskId: string): Promise<void> {
    if (this.grants.unpinTask(taskId)) await this.sync();
  }

  /** Accept this placeholder from one of lazy's own call containers too, while it runs. */
  async pinCall(token: string, ip: string): Promise<void> {
    this.grants.pinCall(token, ip);
    await this.sync();
  }

  /** The call's container is gone: its address no longer redeems the placeholder. */
  async unpinCall(token: string, ip: string): Promise<void> {
    if (this.grants.unpinCall(token, ip)) await this.sync();
  }

  /** A builder session ended: its grants and its MCP token (one registry) stop working. */
  async revokeBuilder(session: string): Promise<number> {
    const n = this.grants.revokeBuilder(session);
    await this.sync();
    return n;
  }

  /** The task's session ended: its grants, its MCP token and its Cursor session placeholders stop working. */
  async revokeTask(taskId: string): Promise<number> {
    this.sessions.revokeTask(taskId);
    const n = this.grants.revokeTask(taskId);
    await this.sync();
    return n;
  }

  /**
   * Also listen on an address the project's containers can reach (on native Linux, the gateway
   * of the project's Docker network), preferring the loopback listener's port (ports.ts).
   */
  /**
   * A daemon that comes back after a crash listens at once where containers reached the one
   * before (ports.ts), before housekeeping has asked Docker anything.
   */
  relisten(): Promise<void> {
    return this.ports.relisten(this.address?.port ?? this.config().proxy.port, this.address?.host);
  }

  listenFor(host: string): Promise<{ host: string; port: number }> {
    return this.ports.listenFor(host, this.address?.port ?? this.config().proxy.port);
  }

  /** Stop listening on an address that is going away (the project's network was removed). */
  unlisten(host: string): void {
    this.ports.unlisten(host);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.live.stop();
    await Promise.race([this.all({ op: "stop" }).catch(() => {}), Bun.sleep(5000)]);
    for (const t of this.threads) t.terminate();
    await this.audit.stop();
  }
}
