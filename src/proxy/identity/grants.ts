/**
 * The grant registry: every secret lazy gives a caller, and whom it stands for (docs:
 * "Just-in-time credential injection", Lifetime) — placeholders (a role, a task, a profile) and
 * the MCP route's tokens (mcp-tokens.ts). The proxy and the MCP route take the caller from what
 * a secret resolves to here, never from what the agent says about itself. A task's or builder
 * session's secrets are revoked together (revokeTask, revokeBuilder) and pinned by one rule
 * (pin.ts).
 *
 * It lives in `proxy-tokens.json` in the daemon's per-project state folder (0600, written
 * atomically), not under the project root that every task container bind-mounts, and it is
 * loaded on open so a daemon restart does not strand running containers (MCP tokens an older
 * daemon kept in mcp-tokens.json are carried into it once). Lookups are served from memory;
 * only minting, pinning and revoking write, and the file is small enough to rewrite whole.
 */
import { chmodSync, existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { LazyError } from "../../util/errors";
import * as Files from "../../util/files";
import * as Log from "../../util/log";
import { McpToken, McpTokens, readOld } from "./mcp-tokens";
import { Pin } from "./pin";
import * as Placeholders from "./placeholders";

const log = Log.create("grants");

export const FILE_NAME = "proxy-tokens.json";

/**
 * A grant lives only while what it was minted for runs (docs: "Lifetime"): a task's, while one
 * of its turns or one of lazy's own calls about it runs; a host one (lazy chat, lazy pair), while
 * the process that asked for it lives. The key identity/live.ts holds for it (null: not checked —
 * builder grants end with their session, lazy's project-wide call grant with its containers).
 */
export function liveKey(g: Pick<Grant, "taskId" | "role" | "profile" | "envVar">): string | null {
  return g.taskId ?? (g.role === "host" ? hostKey(g) : null);
}

/** A host grant's identity (one placeholder per profile and variable), never the placeholder itself; asked per request, so made once per grant. */
function hostKey(g: Pick<Grant, "profile" | "envVar">): string {
  let k = hostKeys.get(g);
  if (k === undefined) {
    k = `host:${g.profile}/${g.envVar}`;
    hostKeys.set(g, k);
  }
  return k;
}
const hostKeys = new WeakMap<object, string>();

/** Why a grant that is not live is refused (401), naming what would make it work. */
export function notLive(g: Pick<Grant, "taskId" | "taskRef" | "role">): string {
  const ref = g.taskRef ?? g.taskId;
  if (!ref)
    return "the lazy chat or lazy pair it was given to has ended: a host placeholder works only while that process runs. Start lazy chat (or lazy pair) again.";
  return `task ${ref} has no running turn: its placeholder works only while one of its turns (or one of lazy's own calls about it) runs, and anything the agent left running was stopped with its turn. lazy send ${ref} "…" starts its next turn.`;
}

const DEFAULT_BUILDER_CAP = 64;

export const Role = z
  .enum(["agent", "builder", "host", "lazy"])
  .describe("agent: a task's turns; builder: a builder session; host: lazy pair/chat on the host; lazy: lazy's own one-shot calls");
export type Role = z.infer<typeof Role>;

export const Grant = z
  .object({
    token: z.string().min(1).describe("the placeholder value handed to the container"),
    role: Role,
    taskId: z.string().nullable().describe("the task this grant belongs to and is revoked with; null for host and project-wide lazy calls"),
    taskRef: z.string().nullable().describe("the task's code, or its short id when it has none, for filtering traffic"),
    session: z.string().nullable().describe("the builder session name (role builder only), revoked with its MCP token"),
    profile: z.string().min(1).describe("the agent profile, which decides the upstream the placeholder redeems against"),
    envVar: z.string().min(1).describe("the environment variable the placeholder was put in"),
    shape: Placeholders.Shape,
    createdAt: z.string().describe("ISO 8601; builder grants are evicted oldest first"),
    ...Pin.shape,
  })
  .describe("One placeholder and the caller it stands for");
export type Grant = z.infer<typeof Grant>;

// mcpTokens came with version 1 still: an older daemon reads the file and ignores them.
const Registry = z
  .object({ version: z.literal(1), grants: z.array(Grant), mcpTokens: z.array(McpToken).optional() })
  .describe(`The ${FILE_NAME} file`);

/** What a launch asks a placeholder for. The same identity always gets the same placeholder back. */
export type Identity = {
  role: Role;
  taskId: string | null;
  taskRef: string | null;
  /** Required for role builder; must be absent otherwise. */
  session?: string | null;
  profile: string;
  envVar: string;
  shape: Placeholders.Shape;
};

export type Options = {
  /** How many builder grants may exist at once before the oldest is evicted. */
  builderCap?: number;
  now?: () => Date;
  /** Called with every grant after each change is saved (the proxy's thread keeps a copy). */
  onChange?: (grants: Grant[]) => void;
};

export class Grants {
  readonly #path: string;
  readonly #builderCap: number;
  readonly #now: () => Date;
  readonly #onChange: ((grants: Grant[]) => void) | undefined;
  /** Insertion order is creation order, which is what builder eviction and the file keep. */
  readonly #byToken = new Map<string, Readonly<Grant>>();
  readonly #byIdentity = new Map<string, string>();
  readonly #mcp = new Map<string, Readonly<McpToken>>();
  /** The MCP route's tokens: lookup and minting (mcp-tokens.ts); revoked and pinned here, with the placeholders. */
  readonly mcp = new McpTokens(this.#mcp, () => this.#save(false));

  private constructor(path: string, opts: Options) {
    this.#path = path;
    this.#builderCap = opts.builderCap ?? DEFAULT_BUILDER_CAP;
    this.#now = opts.now ?? (() => new Date());
    this.#onChange = opts.onChange;
  }

  /** Open (or create) the registry in a daemon state folder, loading what a previous daemon left. */
  static open(stateDir: string, opts: Options = {}): Grants {
    Files.ensurePrivateDir(stateDir);
    const grants = new Grants(join(stateDir, FILE_NAME), opts);
    grants.#load();
    grants.#migrate(stateDir);
    return grants;
  }

  get size(): number {
    return this.#byToken.size;
  }

  /** The grant a presented placeholder stands for. Called per request: memory only. */
  lookup(token: string): Readonly<Grant> | undefined {
    return this.#byToken.get(token);
  }

  /**
   * The placeholder for an identity, minted on first use. Reuse matters: a live container keeps
   * its placeholder across turns, so a fresh one per turn would either break the running turn
   * or pile up equally valid tokens.
   */
  mint(identity: Identity): Readonly<Grant> {
    validate(identity);
    const key = identityKey(identity);
    const existingToken = this.#byIdentity.get(key);
    const existing = existingToken === undefined ? undefined : this.#byToken.get(existingToken);

    if (existing && existing.shape === identity.shape) {
      if (existing.taskRef === identity.taskRef) return existing;
      // The task got a code since: keep the token, update how its traffic is labelled.
      const updated = Object.freeze({ ...existing, taskRef: identity.taskRef });
      this.#byToken.set(existing.token, updated);
      this.#save();
      return updated;
    }
    // Same caller, different credential shape behind the variable: the old placeholder would
    // make the client behave as for the wrong credential, so it is replaced, not kept.
    if (existing) this.#remove(existing.token);

    const grant: Readonly<Grant> = Object.freeze({
      token: this.#freshToken(identity.shape),
      role: identity.role,
      taskId: identity.taskId,
      taskRef: identity.taskRef,
      session: identity.session ?? null,
      profile: identity.profile,
      envVar: identity.envVar,
      shape: identity.shape,
      createdAt: this.#now().toISOString(),
      pinnedIp: null,
    });
    this.#add(grant);
    if (grant.role === "builder") this.#evictBuilders(grant.token);
    this.#save();
    log.debug(`minted a ${grant.shape} placeholder for ${describe(grant)}`);
    return grant;
  }

  /** Revoke every secret of a task, its placeholders and its MCP token (its session ended: accept, reject, close). */
  revokeTask(taskId: string): number {
    return this.#revokeWhere(
      (g) => g.taskId === taskId,
      (t) => t.kind === "task" && t.taskId === taskId,
      `task ${taskId}`,
    );
  }

  /** Revoke a builder session's secrets: its placeholders and its MCP token. */
  revokeBuilder(session: string): number {
    return this.#revokeWhere(
      (g) => g.role === "builder" && g.session === session,
      (t) => t.kind === "builder" && t.session === session,
      `builder session ${session}`,
    );
  }

  /** Revoke one placeholder. */
  revoke(token: string): boolean {
    if (!this.#byToken.has(token)) return false;
    this.#remove(token);
    this.#save();
    return true;
  }

  /**
   * Accept this placeholder only from `ip` from now on (native Linux Docker, where addresses are
   * the container's); an agent's placeholder takes its task's MCP token with it (minted here if
   * the launch has not asked for it yet), so both are accepted from the task's container only.
   */
  pin(token: string, ip: string): boolean {
    const grant = this.#byToken.get(token);
    if (!grant) return false;
    const mcp = grant.role === "agent" && grant.taskId ? this.mcp.forTask(grant.taskId) : undefined;
    if (grant.pinnedIp === ip && (!mcp || mcp.pinnedIp === ip)) return true;
    this.#byToken.set(token, Object.freeze({ ...grant, pinnedIp: ip }));
    if (mcp) this.#mcp.set(mcp.token, Object.freeze({ ...mcp, pinnedIp: ip }));
    this.#save();
    return true;
  }

  /**
   * The task's container is stopping: its address redeems none of the task's secrets from now on
   * (Docker hands a freed address to the next container at once). They stay pinned, to no
   * address, until the next turn pins its container's. True when something changed.
   */
  unpinTask(taskId: string): boolean {
    let changed = false;
    const unpinned = <T extends Pin>(s: T): T => Object.freeze({ ...s, pinnedIp: null, callIps: s.callIps ?? [] });
    for (const g of this.#byToken.values())
      if (g.taskId === taskId && g.pinnedIp) {
        this.#byToken.set(g.token, unpinned(g));
        changed = true;
      }
    for (const t of this.#mcp.values())
      if (t.kind === "task" && t.taskId === taskId && t.pinnedIp) {
        this.#mcp.set(t.token, unpinned(t));
        changed = true;
      }
    if (changed) this.#save();
    return changed;
  }

  /**
   * Accept this placeholder from one of lazy's own call containers too, while the call runs (a
   * call shares its task's grant, or the project's): `pin` stays the task container's.
   */
  pinCall(token: string, ip: string): boolean {
    const grant = this.#byToken.get(token);
    if (!grant) return false;
    // One entry per container, even for an address already there: Docker gives a dead
    // container's address to the next one at once, and the dead one's unpinCall may come after
    // the new one's pinCall; it must take away its own entry, not the newcomer's.
    this.#byToken.set(token, Object.freeze({ ...grant, callIps: [...(grant.callIps ?? []), ip] }));
    this.#save();
    return true;
  }

  /** The call's container is gone: its entry goes (another container's entry for the same address stays). */
  unpinCall(token: string, ip: string): boolean {
    const grant = this.#byToken.get(token);
    const at = grant?.callIps?.indexOf(ip) ?? -1;
    if (!grant?.callIps || at < 0) return false;
    this.#byToken.set(token, Object.freeze({ ...grant, callIps: grant.callIps.toSpliced(at, 1) }));
    this.#save();
    return true;
  }

  #freshToken(shape: Placeholders.Shape): string {
    for (;;) {
      const token = Placeholders.mint(shape);
      if (!this.#byToken.has(token)) return token;
    }
  }

  #add(grant: Readonly<Grant>): void {
    this.#byToken.set(grant.token, grant);
    this.#byIdentity.set(identityKey(grant), grant.token);
  }

  #remove(token: string): void {
    const grant = this.#byToken.get(token);
    if (!grant) return;
    this.#byToken.delete(token);
    const key = identityKey(grant);
    if (this.#byIdentity.get(key) === token) this.#byIdentity.delete(key);
  }

  /** Oldest builder grants first, never the one just minted (the launch in hand needs it). */
  #evictBuilders(keep: string): void {
    let builders = 0;
    for (const g of this.#byToken.values()) if (g.role === "builder") builders++;
    if (builders <= this.#builderCap) return;
    for (const g of [...this.#byToken.values()]) {
      if (builders <= this.#builderCap) break;
      if (g.role !== "builder" || g.token === keep) continue;
      this.#remove(g.token);
      builders--;
      log.info(`evicted the oldest builder grant (${describe(g)}): more than ${this.#builderCap} builder grants`);
    }
  }

  /** The one revoke path: the placeholders and MCP tokens that match go in one save. */
  #revokeWhere(grant: (g: Readonly<Grant>) => boolean, mcp: (t: Readonly<McpToken>) => boolean, what: string): number {
    const doomed = [...this.#byToken.values()].filter(grant);
    const tokens = [...this.#mcp.values()].filter(mcp);
    if (doomed.length + tokens.length === 0) return 0;
    for (const g of doomed) this.#remove(g.token);
    for (const t of tokens) this.#mcp.delete(t.token);
    this.#save();
    log.info(`revoked ${doomed.length} placeholder grant(s) and ${tokens.length} MCP token(s) of ${what}`);
    return doomed.length + tokens.length;
  }

  #load(): void {
    if (!existsSync(this.#path)) return;
    // The registry holds live placeholders: tighten a file someone loosened rather than trust it.
    const mode = statSync(this.#path).mode & 0o777;
    if (mode !== 0o600) {
      chmodSync(this.#path, 0o600);
      log.warn(`${this.#path} was mode ${mode.toString(8)}; set it back to 600`);
    }
    const text = readFileSync(this.#path, "utf8");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw unreadable(this.#path, (e as Error).message);
    }
    const parsed = Registry.safeParse(json);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${FILE_NAME} ${i.path.join(".")} — ${i.message}`);
      throw unreadable(this.#path, "it does not match the grant registry's shape", problems);
    }
    // Call containers do not outlive the daemon that made them (housekeeping removes them): their
    // addresses go, the grant stays pinned, so a container that gets such an address later is refused.
    // A grant of lazy's own calls (role lazy) goes whole: no call outlives its daemon, and where
    // the engine cannot pin (a remote one) a killed daemon's orphan call, retrying its request,
    // would otherwise be answered by the next daemon, which never asks the model again for it.
    let dropped = false;
    for (const g of parsed.data.grants) {
      if (g.role === "lazy") {
        dropped = true;
        continue;
      }
      dropped ||= !!g.callIps?.length;
      this.#add(Object.freeze(g.callIps?.length ? { ...g, callIps: [] } : g));
    }
    for (const t of parsed.data.mcpTokens ?? []) this.#mcp.set(t.token, Object.freeze(t));
    if (dropped) this.#save();
  }

  /** An older daemon's mcp-tokens.json: its tokens join the registry, saved before the old file goes. */
  #migrate(stateDir: string): void {
    const old = readOld(stateDir);
    if (!old) return;
    // That file, where it exists, is the newest word on MCP tokens (a first upgrade, a crash
    // before it was removed, or an older daemon run in between that minted and revoked there):
    // what this file held of them is replaced, so nothing that daemon revoked comes back.
    this.#mcp.clear();
    for (const t of old.tokens) this.#mcp.set(t.token, Object.freeze(t));
    this.#save(false);
    old.done();
    log.info(`carried ${old.tokens.length} MCP token(s) from mcp-tokens.json into ${FILE_NAME}`);
  }

  /**
   * Write the registry; the proxy threads get the placeholders (`placeholders`: they changed)
   * even when the write fails, so a revocation holds in memory whatever the disk does.
   */
  #save(placeholders = true): void {
    this.#version++;
    const registry = { version: 1 as const, grants: this.all(), mcpTokens: [...this.#mcp.values()] };
    try {
      Files.writeFileAtomic(this.#path, `${JSON.stringify(registry, null, 2)}\n`, 0o600);
    } finally {
      if (placeholders) this.#onChange?.(registry.grants);
    }
  }

  /** Every secret the task holds now (its placeholders, brokered services' too, and its MCP token): what its records must not carry. */
  secretsOf(taskId: string): string[] {
    const out: string[] = [];
    for (const g of this.#byToken.values()) if (g.taskId === taskId) out.push(g.token);
    for (const t of this.#mcp.values()) if (t.taskId === taskId) out.push(t.token);
    return out;
  }

  /** Every grant, oldest first. */
  all(): Grant[] {
    return [...this.#byToken.values()];
  }

  /** Moves with every change of the registry (a save): what a cache of its tokens is keyed by. */
  version(): number {
    return this.#version;
  }
  #version = 0;

  /** Every MCP token, oldest first. */
  allMcp(): Readonly<McpToken>[] {
    return [...this.#mcp.values()];
  }
}

function validate(identity: Identity): void {
  const problems: string[] = [];
  if (!identity.profile) problems.push("profile is empty");
  if (!identity.envVar) problems.push("envVar is empty");
  if (identity.role === "agent" && !identity.taskId) problems.push("an agent grant needs a taskId");
  if (identity.role === "builder" && !identity.session) problems.push("a builder grant needs a session name");
  if (identity.role !== "builder" && identity.session) problems.push(`a grant for role ${identity.role} takes no session name`);
  // One grant per project per (profile, env var): nothing signals when a host session ends.
  if (identity.role === "host" && identity.taskId !== null) problems.push("a host grant is project-wide: taskId must be null");
  if (problems.length > 0) throw new LazyError("invalid_input", "cannot mint a placeholder for this launch", problems);
}

/** Role, task, builder session, profile, env var: the docs' identity, plus the session that keys builders. */
function identityKey(g: Pick<Identity, "role" | "taskId" | "session" | "profile" | "envVar">): string {
  return JSON.stringify([g.role, g.taskId, g.session ?? null, g.profile, g.envVar]);
}

/** For logs: who, never the secret. */
function describe(g: Readonly<Grant>): string {
  const who = g.taskRef ?? g.taskId ?? g.session ?? "project";
  return `role=${g.role} ${who} profile=${g.profile} ${g.envVar}`;
}

function unreadable(path: string, why: string, details: string[] = []): LazyError {
  return new LazyError(
    "internal",
    `the placeholder registry ${path} is unreadable (${why}); remove it to revoke every placeholder and MCP token and start fresh`,
    details,
  );
}
