/**
 * The model proxy, always on inside the daemon: every agent's model traffic passes through it.
 * It resolves a placeholder to its grant, forwards only the model API to the upstream the
 * grant's profile points at, swaps in the real credential at the last hop, and records each
 * call (a bounded audit trail, usage-limit readings, provider health). Real credentials stay
 * with the daemon: this module reads them from the credential store's memory per request.
 */
import type { Database } from "bun:sqlite";
import type { Server } from "bun";
import type { Config, ResolvedProfile } from "../config";
import { resolveProfile } from "../config";
import type { CredentialStore } from "../credentials";
import { LazyError } from "../util/errors";
import * as Log from "../util/log";
import { ProxyServer } from "./server";
import { Grants, type Grant, type Role } from "./grants";
import { Targets, type Target } from "./targets";
import { Audit } from "./audit";
import { Limits } from "./limits";
import { Health } from "./health";
import { handle, type Context } from "./forward";
import { handleCursor, CursorSessions, PREFIX as CURSOR_PREFIX } from "./cursor";
import type { Shape } from "./placeholders";

export { Targets, type Target } from "./targets";
export type { Grant } from "./grants";
export { FAILURE_KINDS, type ProviderHealth } from "./health";
export type { LimitView } from "./limits";
export type { Row as AuditRow } from "./audit";
export { CURSOR_PREFIX };

export interface Launch {
  /** The variable the harness reads its credential from, holding the placeholder. */
  envVar: string;
  placeholder: string;
  target: Target;
  profile: ResolvedProfile;
}

export class Proxy {
  readonly grants: Grants;
  readonly audit: Audit;
  readonly limits: Limits;
  readonly health = new Health();
  readonly sessions = new CursorSessions();
  readonly credentialProblems = new Map<string, string>();
  private server: ProxyServer;
  /** Listeners where the project's containers reach the proxy (a Docker network's gateway). */
  private extra = new Map<string, ProxyServer>();
  private targets: Targets;
  private ctx: Context;

  constructor(
    stateDir: string,
    db: Database,
    private credentials: CredentialStore,
    private config: () => Config,
    private log = Log.create("proxy"),
  ) {
    this.grants = Grants.open(stateDir);
    this.targets = Targets.build(config());
    this.audit = new Audit(db, () => ({ maxRows: this.config().proxy.audit.max_rows, maxAgeDays: this.config().proxy.audit.max_age_days }), log);
    this.limits = new Limits(db);
    this.ctx = {
      grants: this.grants,
      credentials,
      targets: () => this.targets,
      audit: this.audit,
      limits: this.limits,
      health: this.health,
      log,
      firstByteTimeoutMs: () => this.config().proxy.first_byte_timeout_s * 1000,
      credentialProblems: this.credentialProblems,
    };
    this.server = new ProxyServer(log, (req, server) => this.route(req, server));
  }

  private route(req: Request, server: Server<undefined>): Promise<Response> {
    const url = req.url;
    const p = (url.startsWith(CURSOR_PREFIX, url.indexOf("/", url.indexOf("//") + 2)) ? handleCursor(this.ctx, this.sessions, req, server) : handle(this.ctx, req, server));
    return p.catch((e: unknown) => {
      const msg = `lazy's proxy failed: ${(e as Error)?.message ?? String(e)}`;
      this.log.error(`${msg}\n${(e as Error)?.stack ?? ""}`);
      return Response.json({ type: "error", error: { type: "api_error", message: msg } }, { status: 500, headers: { "x-should-retry": "false" } });
    });
  }

  async start(): Promise<void> {
    const c = this.config();
    await this.server.start(c.proxy.bind, c.proxy.port);
  }

  get state() {
    return this.server.state;
  }
  get error() {
    return this.server.error;
  }
  get address() {
    return this.server.address;
  }

  /** A new config: rebuild the credential map (the caller validated it with Targets.build first). */
  reconfigure(config: Config): void {
    this.targets = Targets.build(config);
  }

  /**
   * The placeholder for a launch: minted per (role, task, profile, env var), shaped like the
   * real credential it stands for, in the variable the harness reads. A profile whose
   * credential is missing fails here, before anything starts, naming the slot and the fix.
   */
  mintFor(opts: { role: Role; profile: string; taskId?: string | null; taskRef?: string | null; session?: string | null }): Launch {
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
    return { envVar, placeholder: grant.token, target, profile };
  }

  /** The task's session ended: its grants and Cursor session placeholders stop working. */
  revokeTask(taskId: string): number {
    this.sessions.revokeTask(taskId);
    return this.grants.revokeTask(taskId);
  }

  /**
   * Also listen on an address the project's containers can reach (on native Linux, the gateway
   * of the project's Docker network), preferring the loopback listener's port.
   */
  async listenFor(host: string): Promise<{ host: string; port: number }> {
    const have = this.extra.get(host);
    if (have?.address) return have.address;
    const s = new ProxyServer(this.log, (req, server) => this.route(req, server));
    await s.start(host, this.address?.port ?? this.config().proxy.port);
    if (!s.address) throw new LazyError("proxy_unavailable", `lazy's proxy could not listen on ${host} for the project's containers (${s.error}); run lazy doctor.`);
    this.extra.set(host, s);
    return s.address;
  }

  /** Stop listening on an address that is going away (the project's network was removed). */
  unlisten(host: string): void {
    this.extra.get(host)?.stop();
    this.extra.delete(host);
  }

  async stop(): Promise<void> {
    for (const s of this.extra.values()) s.stop();
    this.server.stop();
    this.limits.stop();
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
