/**
 * The model proxy, always on inside the daemon: every agent's model traffic passes through it.
 * It resolves a placeholder to its grant, forwards only the model API to the upstream the
 * grant's profile points at, swaps in the real credential at the last hop, and records each
 * call (a bounded audit trail, usage-limit readings, provider health).
 *
 * The request path runs on a thread of its own (thread.ts); this class, on the daemon's main
 * thread, owns the grants and the audit trail and keeps that thread's copy of the config, the
 * credential values and the grant table current.
 */
import type { Database } from "bun:sqlite";
import type { Config, ResolvedProfile } from "../config";
import { resolveProfile } from "../config";
import type { CredentialStore } from "../credentials";
import { LazyError } from "../util/errors";
import * as Log from "../util/log";
import { Grants, type Role } from "./grants";
import { Targets, type Target } from "./targets";
import { Audit, workerUrl } from "./audit";
import { PREFIX as CURSOR_PREFIX } from "./cursor";
import type { Shape } from "./placeholders";
import type { ProxyState } from "./server";
import type { ToThread, FromThread, Call, Stats, Listening } from "./thread";

export { Targets, type Target } from "./targets";
export type { Grant } from "./grants";
export { FAILURE_KINDS, type ProviderHealth } from "./health";
export type { LimitView } from "./limits";
export type { Row as AuditRow } from "./audit";
export type { Stats } from "./thread";
export { CURSOR_PREFIX };

export interface Launch {
  /** The variable the harness reads its credential from, holding the placeholder. */
  envVar: string;
  placeholder: string;
  target: Target;
  profile: ResolvedProfile;
}

/** How many times a proxy thread that died is started again before the proxy is reported failed. */
const RESPAWNS = 3;

export class Proxy {
  readonly grants: Grants;
  readonly audit: Audit;
  state: ProxyState = "starting";
  error: string | undefined;
  address: { host: string; port: number } | null = null;
  private targets: Targets;
  private thread!: Worker;
  private calls = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  /** Every address listened on, so a restarted thread listens there again. */
  private listening = new Map<string, number>();
  private respawns = 0;
  private gone = false;
  private stopping = false;

  constructor(
    stateDir: string,
    private db: Database,
    private credentials: CredentialStore,
    private config: () => Config,
    private log = Log.create("proxy"),
  ) {
    this.grants = Grants.open(stateDir, { onChange: (grants) => this.post({ type: "grants", grants }) });
    this.targets = Targets.build(config());
    this.audit = new Audit(db, () => ({ maxRows: this.config().proxy.audit.max_rows, maxAgeDays: this.config().proxy.audit.max_age_days }), log, () => this.sync());
    credentials.onChange(() => this.post({ type: "credentials", credentials: this.credentials.snapshot() }));
    this.spawn();
  }

  private spawn(): void {
    const thread = new Worker(workerUrl("thread.ts"));
    thread.onmessage = (e: MessageEvent<FromThread>) => {
      const m = e.data;
      if (m.type === "audit") return this.audit.write(m.rows);
      const waiter = this.calls.get(m.id);
      this.calls.delete(m.id);
      if (m.error !== undefined) waiter?.reject(new Error(m.error));
      else waiter?.resolve(m.value);
    };
    // The thread died (a bug; each request's own errors are caught there): requests in flight
    // on it are lost. Start another with the same state on the same addresses, a few times.
    thread.onerror = (e) => {
      this.log.error(`lazy's proxy failed: its thread stopped (${e.message})`);
      thread.terminate();
      for (const w of this.calls.values()) w.reject(new Error(`lazy's proxy failed: its thread stopped (${e.message})`));
      this.calls.clear();
      if (this.stopping) return;
      if (this.respawns++ >= RESPAWNS) {
        this.gone = true;
        this.state = "failed";
        this.error = `its thread stopped ${RESPAWNS + 1} times; the last time: ${e.message}`;
        return;
      }
      this.spawn();
      for (const [host, port] of this.listening) void this.listen(host, port).catch((err: Error) => this.log.error(`lazy's proxy failed to listen on ${host} again: ${err.message}`));
    };
    this.thread = thread;
    const c = this.config();
    this.post({ type: "init", init: { config: c, credentials: this.credentials.snapshot(), grants: this.grants.all(), dbPath: this.db.filename, log: Log.settings() } });
  }

  private post(m: ToThread): void {
    this.thread.postMessage(m);
  }

  private call<T>(c: Call): Promise<T> {
    // A thread that was given up on answers nothing: fail at once rather than wait forever.
    if (this.gone) return Promise.reject(new LazyError("proxy_unavailable", `lazy's proxy failed: ${this.error}; restart the daemon: lazy daemon restart.`));
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.post({ type: "call", id, call: c });
    });
  }

  private async listen(host: string, port: number): Promise<Listening> {
    const r = await this.call<Listening>({ op: "listen", host, port });
    if (r.address) this.listening.set(host, r.address.port);
    return r;
  }

  async start(): Promise<void> {
    const c = this.config();
    const r = await this.listen(c.proxy.bind, c.proxy.port);
    this.address = r.address;
    this.state = r.address ? "ready" : "failed";
    this.error = r.error;
  }

  /** Resolves once the proxy's thread has applied everything posted before, and handed over its audit rows. */
  sync(): Promise<void> {
    return this.call({ op: "sync" });
  }

  /** Usage-limit readings, provider health and rejected OAuth tokens, as of now. */
  stats(): Promise<Stats> {
    return this.call({ op: "stats" });
  }

  /** A credential was stored again: forget that its provider rejected the old one. */
  clearProblem(name: string): Promise<void> {
    return this.call({ op: "clear-problem", name });
  }

  /** A new config: rebuild the credential map (the caller validated it with Targets.build first). */
  reconfigure(config: Config): void {
    this.targets = Targets.build(config);
    this.post({ type: "config", config });
  }

  /**
   * The placeholder for a launch: minted per (role, task, profile, env var), shaped like the
   * real credential it stands for, in the variable the harness reads. A profile whose
   * credential is missing fails here, before anything starts, naming the slot and the fix.
   * Resolves once the proxy's thread knows the placeholder.
   */
  async mintFor(opts: { role: Role; profile: string; taskId?: string | null; taskRef?: string | null; session?: string | null }): Promise<Launch> {
    const config = this.config();
    const profile = resolveProfile(config, opts.profile);
    const target = this.targets.forProfile(profile.name);
    if (!target) throw new LazyError("invalid_input", `No profile "${opts.profile}".`);
    if (target.unmapped) throw new LazyError("credential_missing", `Profile ${profile.name} has no credential mapped for ${target.provider}: ${target.unmapped}.`);
    const cred = target.credential ? this.credentials.get(target.credential) : undefined;
    if (target.credential && !cred)
      throw new LazyError("credential_missing", `Profile ${profile.name} needs the "${target.credential}" credential, which is not stored: run lazy auth set ${target.credential}.`);
    const { envVar, shape } = variableFor(profile, target, cred?.kind ?? null);
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

  /** Accept this placeholder only from `ip` from now on; resolves once the proxy's thread does. */
  async pin(token: string, ip: string): Promise<void> {
    this.grants.pin(token, ip);
    await this.sync();
  }

  /** The task's session ended: its grants and Cursor session placeholders stop working. */
  async revokeTask(taskId: string): Promise<number> {
    this.post({ type: "revoke-sessions", taskId });
    const n = this.grants.revokeTask(taskId);
    await this.sync();
    return n;
  }

  /**
   * Also listen on an address the project's containers can reach (on native Linux, the gateway
   * of the project's Docker network), preferring the loopback listener's port.
   */
  async listenFor(host: string): Promise<{ host: string; port: number }> {
    const r = await this.listen(host, this.listening.get(host) ?? this.address?.port ?? this.config().proxy.port);
    if (!r.address) throw new LazyError("proxy_unavailable", `lazy's proxy could not listen on ${host} for the project's containers (${r.error}); run lazy doctor.`);
    return r.address;
  }

  /** Stop listening on an address that is going away (the project's network was removed). */
  unlisten(host: string): void {
    this.listening.delete(host);
    void this.call({ op: "unlisten", host }).catch(() => {});
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.race([this.call({ op: "stop" }).catch(() => {}), Bun.sleep(5000)]);
    this.thread.terminate();
    await this.audit.stop();
  }
}

/** Which variable a harness reads its credential from, and the placeholder shape to put there. */
export function variableFor(profile: ResolvedProfile, target: Target, kind: string | null): { envVar: string; shape: Shape } {
  const openrouter = target.credential === "openrouter";
  switch (profile.harness) {
    case "cursor":
      return { envVar: "CURSOR_API_KEY", shape: "cursor" };
    case "codex":
      return { envVar: "OPENAI_API_KEY", shape: openrouter ? "openrouter" : "openai" };
    case "pi":
      if (profile.wire === "openai") return { envVar: "OPENAI_API_KEY", shape: openrouter ? "openrouter" : "openai" };
      return kind === "oauth-token" ? { envVar: "ANTHROPIC_OAUTH_TOKEN", shape: "anthropic-oauth" } : { envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" };
    case "claude":
      if (target.style === "bearer" && target.credential) return { envVar: "ANTHROPIC_AUTH_TOKEN", shape: openrouter ? "openrouter" : "generic" };
      return kind === "oauth-token" ? { envVar: "CLAUDE_CODE_OAUTH_TOKEN", shape: "anthropic-oauth" } : { envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" };
  }
}
