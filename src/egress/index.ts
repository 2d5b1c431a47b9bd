/**
 * lazy's egress proxy: the one way a task container reaches past the host under `[container]
 * network = "allowlist"` (or "observe"). It listens on the project network's gateway (never on
 * 0.0.0.0), is the container's HTTP(S)_PROXY, and lets through only the hosts the policy
 * allows (policy.ts): CONNECT tunnels (TLS stays end to end) and absolute-form plain HTTP
 * (head.ts says what is and is not supported). Every connection, allowed or refused, is a row
 * in the proxy's audit trail (role "egress", upstream `egress:host:port`), so `lazy watch`
 * shows it as a `net>` line. A request carrying any of lazy's placeholders or MCP tokens (CONNECT
 * host, plain-HTTP request line, headers or body; as is, base64, hex, reversed, or cut across two
 * header fields or two body chunks: canary.ts) is refused and its task stopped (`onLeak`).
 *
 * The firewall side (what else the bridge may reach) is network/fence.ts; `fenceFor` gives
 * it the ports. It runs on the daemon's main thread: a download through it costs CPU in the
 * kernel's two TCP connections and in Bun's copy of each read, not in JavaScript (reads come
 * in ~500 KB chunks), so a Worker would not make it faster (bench/egress.ts, bench/README.md).
 */
import { readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import type { Config } from "../config";
import { type Fence, HostNet } from "../network";
import { type AuditBatch, AuditRecorder, type AuditRefusalTally, type Grant, type McpToken } from "../proxy";
import { LazyError } from "../util/errors";
import { writeFileAtomic } from "../util/files";
import type { Logger } from "../util/log";
import { type Form, formsOf } from "./canary";
import { decide, isHostOwn, type Lookup, rulesOf } from "./policy";
import { type Brokered, type Dial, type Done, Listener, type Refusal } from "./server";

export { formsOf, formsPattern } from "./canary";
export { MAX_HEAD } from "./head";
export { type Brokered, HEAD_TIMEOUT_MS, PER_SOURCE } from "./server";

/** Where the egress proxy first tries to listen on a gateway (the model proxy's first is 26124). */
export const FIRST_PORT = 26224;
/** How long resolving a host may take before the connection is refused. */
const RESOLVE_TIMEOUT_MS = 10_000;
/** Behind the host's proxy: how long before the name goes to it unresolved (its DNS, not ours). */
const PROXIED_RESOLVE_MS = 3_000;

export interface EgressDeps {
  config: () => Config;
  /**
   * The proxy's grants: placeholders and MCP tokens to look for, and which task a container
   * address is; `version` moves whenever they change.
   */
  grants: { all(): Grant[]; allMcp(): readonly Readonly<McpToken>[]; version(): number };
  /** The proxy's audit trail. */
  audit: { write(batch: AuditBatch): void; refused(tally: AuditRefusalTally): void };
  log: Logger;
  /** A task's placeholder was seen on its way out (`why` names where, never the value). */
  onLeak: (taskId: string, why: string) => void;
  /**
   * Where the port on each gateway is kept (egress-ports.json in the state folder): containers
   * were started with it in HTTP_PROXY, so a daemon that comes back listens there again, and
   * the keeper holds it meanwhile (daemon/keeper.ts). None: ports are not kept (tests).
   */
  portsFile?: string;
  /** The host's environment, for its own proxy and NO_PROXY (the daemon's: process.env). */
  env?: Record<string, string | undefined>;
  /** How names are resolved (node:dns; a test's own, so no query leaves the machine). */
  lookup?: Lookup;
  /**
   * The broker (src/broker): a CONNECT to a brokered host goes to its terminator instead, once
   * the ClientHello names that host; a brokered host needs no entry in allow (lazy.toml names it).
   */
  broker?: (src: string, host: string, port: number) => { port: number; brokered: Brokered } | null;
}

/** A secret lazy gave out, whose it is (for the refusal), and the task a leak of it stops. */
type Secret = { token: string; taskId: string | null; who: string; kind: keyof typeof KINDS; forms: Form[] };
/** Each kind of secret: what it is called, what it is for (in a refusal), and what stands for it in a record. */
const KINDS = {
  placeholder: { name: "placeholder", for: "its stand-in for a credential", mark: "[placeholder]" },
  mcp: { name: "MCP token", for: "its key to lazy's tools", mark: "[mcp-token]" },
} as const;

/** The environment a fenced task container gets: its egress proxy, and the gateway reached directly. */
export function proxyEnv(gateway: string, port: number): Record<string, string> {
  const url = `http://${gateway}:${port}`;
  const no = `${gateway},localhost,127.0.0.1`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url, NO_PROXY: no, no_proxy: no };
}

export class Egress {
  private listeners = new Map<string, Listener>();
  private recorder: AuditRecorder;
  private leaked = new Map<string, number>();

  constructor(private d: EgressDeps) {
    this.recorder = new AuditRecorder(
      (b) => d.audit.write(b),
      (t) => d.audit.refused(t),
    );
  }

  /**
   * Listen on the gateway (once; the same port while it lasts). The port a daemon before this
   * one listened on there comes first (egress-ports.json: running containers' HTTP_PROXY points
   * at it, and the keeper held it since the crash), then FIRST_PORT upward; each project's
   * gateway is its own address, so projects do not collide.
   */
  listenFor(gateway: string): number {
    let l = this.listeners.get(gateway);
    if (!l) {
      const known = this.known();
      const before = known[gateway];
      const ports = [...(before ? [before] : []), ...Array.from({ length: 20 }, (_, i) => FIRST_PORT + i)];
      for (const port of ports)
        try {
          l ??= new Listener(gateway, port, this.hooks(gateway), () => this.maxToken());
        } catch {} // taken: the next one
      try {
        l ??= new Listener(gateway, 0, this.hooks(gateway), () => this.maxToken());
      } catch (e) {
        throw new LazyError(
          "proxy_unavailable",
          `lazy's egress proxy could not listen on ${gateway} (${(e as Error).message}); run lazy doctor.`,
        );
      }
      this.listeners.set(gateway, l);
      this.d.log.info(`egress proxy listening on ${gateway}:${l.port}`);
      // The fence then drops the old port: whatever holds it now is out of the containers' reach.
      if (before && before !== l.port)
        this.d.log.error(
          `the egress proxy's port ${before} on ${gateway}, where running task containers' HTTP_PROXY points, is held by another process; it listens on ${l.port}: new turns use it, running turns reach no host until their next turn`,
        );
      // Only this gateway: a project has one network, and an older one's address may be another
      // project's by now (the keeper would hold its port, and relisten listen there).
      if (this.d.portsFile && (before !== l.port || Object.keys(known).length !== 1))
        try {
          writeFileAtomic(this.d.portsFile, JSON.stringify({ [gateway]: l.port }));
        } catch (e) {
          this.d.log.warn(`could not record the egress proxy's port on ${gateway}: ${(e as Error).message}`);
        }
    }
    return l.port;
  }

  /**
   * A daemon that comes back after a crash: listen at once on each gateway of this host where
   * the one before did, before housekeeping has asked Docker anything (a running turn's next
   * connection finds it). Not under a mode without the egress proxy; an address gone with its
   * network is passed over.
   */
  relisten(): void {
    const mode = this.d.config().container.network;
    if (mode !== "allowlist" && mode !== "observe") return;
    const here = new Set(Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((i) => i.address)));
    for (const gateway of Object.keys(this.known()))
      if (here.has(gateway))
        try {
          this.listenFor(gateway);
        } catch (e) {
          this.d.log.error((e as Error).message);
        }
  }

  /** The ports kept from before, by gateway. */
  private known(): Record<string, number> {
    if (!this.d.portsFile) return {};
    try {
      const k = JSON.parse(readFileSync(this.d.portsFile, "utf8")) as Record<string, unknown>;
      return Object.fromEntries(Object.entries(k).filter((e): e is [string, number] => Number.isInteger(e[1])));
    } catch {
      return {};
    }
  }

  unlisten(gateway: string): void {
    this.listeners.get(gateway)?.stop();
    this.listeners.delete(gateway);
  }

  /**
   * The fence for the project's bridge (network/fence.ts), listening first where the mode
   * needs the egress proxy. `proxyPort` is where the model proxy and MCP listen on the gateway.
   */
  fenceFor(config: Config, gateway: string, proxyPort: number): Fence.Spec {
    const mode = config.container.network;
    if (mode === "none" || mode === "open") {
      this.unlisten(gateway);
      return { mode, gateway, ports: [proxyPort] };
    }
    return { mode, gateway, ports: [proxyPort, this.listenFor(gateway)] };
  }

  /** What a task container's environment gets under the mode: the proxy variables, or nothing. */
  envFor(config: Config, gateway: string): Record<string, string> {
    const mode = config.container.network;
    const l = this.listeners.get(gateway);
    return (mode === "allowlist" || mode === "observe") && l ? proxyEnv(gateway, l.port) : {};
  }

  stop(): void {
    for (const g of [...this.listeners.keys()]) this.unlisten(g);
    this.recorder.flush();
  }

  /** The longest form of a secret (canary.ts): what a body scan carries over from one chunk to the next. */
  private maxToken(): number {
    let n = 0;
    for (const x of this.secrets()) for (const f of x.forms) n = Math.max(n, f.text.length);
    return n;
  }

  private hooks(gateway: string) {
    const own = subnetOf(gateway);
    return {
      // The project's containers, and this host's own processes (they reach the hosts anyway).
      admit: (src: string) => own(src) || isHostOwn(src.replace(/^::ffff:/i, "")),
      decide: async (src: string, head: { kind: "connect" | "http"; host: string; port: number }): Promise<Dial | Refusal> => {
        const b = head.kind === "connect" ? this.d.broker?.(src, head.host.toLowerCase(), head.port) : null;
        if (b) return { address: "127.0.0.1", port: b.port, brokered: b.brokered };
        // Behind the host's own proxy ([container] inherit_network_env): chained, its password
        // kept here; a name this host cannot resolve (in time) goes to it by name (policy.ts).
        const via = this.d.config().container.inherit_network_env
          ? HostNet.proxyFor(head.host, this.d.env ?? process.env, { port: head.port, kind: head.kind })
          : null;
        const r = await decide(rulesOf(this.d.config()), head.host, head.port, {
          proxied: via !== null,
          timeoutMs: via ? PROXIED_RESOLVE_MS : RESOLVE_TIMEOUT_MS,
          lookup: this.d.lookup,
        });
        if (!r.ok) return { status: r.status, why: r.why, remedy: r.remedy };
        return via ? { address: r.address, via } : { address: r.address };
      },
      leak: (_src: string, text: string): Refusal | null => {
        let s: Secret | undefined;
        let form: Form | undefined;
        for (const x of this.secrets()) {
          form = x.forms.find((f) => text.includes(f.text));
          if (form) {
            s = x;
            break;
          }
        }
        if (!s || !form) return null;
        const kind = KINDS[s.kind];
        const as = form.as === "as is" ? "" : ` (${form.as === "reversed" ? "reversed" : `${form.as}-encoded`})`;
        const why = `the request carries ${s.who} ${kind.name}${as} (${kind.for}), which never leaves through the egress proxy`;
        if (s.taskId) {
          const last = this.leaked.get(s.taskId) ?? 0;
          if (Date.now() - last > 5_000) {
            this.leaked.set(s.taskId, Date.now());
            this.d.onLeak(s.taskId, `its ${kind.name} was sent towards the network through lazy's egress proxy`);
          }
        }
        return { status: 403, why, remedy: s.taskId ? "nothing to allow: lazy stopped the task" : "nothing to allow" };
      },
      done: (c: Done) => this.record(c),
    };
  }

  /**
   * The secrets lazy gave out that never leave through here: every placeholder and MCP token,
   * with whose it is (for the refusal) and the task a leak stops.
   */
  private secrets(): Secret[] {
    // Made again only when the registry changed: it is asked for every head and body chunk.
    const version = this.d.grants.version();
    if (this.secretsAt?.version === version) return this.secretsAt.list;
    const grants = this.d.grants.all();
    const refs = new Map(grants.flatMap((g) => (g.taskId && g.taskRef ? [[g.taskId, g.taskRef] as const] : [])));
    const list: Secret[] = [
      ...grants.map((g) => ({
        token: g.token,
        taskId: g.taskId,
        who: g.taskRef ? `task ${g.taskRef}'s` : `lazy's ${g.role}`,
        kind: "placeholder" as const,
        forms: formsOf(g.token),
      })),
      ...this.d.grants.allMcp().map((t) => ({
        token: t.token,
        taskId: t.taskId,
        who: t.kind === "task" && t.taskId ? `task ${refs.get(t.taskId) ?? t.taskId}'s` : `builder session ${t.session}'s`,
        kind: "mcp" as const,
        forms: formsOf(t.token),
      })),
    ];
    this.secretsAt = { version, list };
    return list;
  }
  private secretsAt: { version: number; list: Secret[] } | undefined;

  private record(c: Done): void {
    const grants = this.d.grants.all();
    const who = grants.find((g) => g.role === "agent" && g.pinnedIp === c.src) ?? grants.find((g) => g.callIps?.includes(c.src));
    // A placeholder or MCP token in the path or host is never recorded.
    const secrets = this.secrets();
    const clean = (s: string) =>
      secrets.reduce((t, x) => x.forms.reduce((u, f) => (u.includes(f.text) ? u.split(f.text).join(KINDS[x.kind].mark) : u), t), s);
    // A source no grant names, refused by lazy (another network's container, …): counted per
    // minute, source and reason, not a row (proxy/audit/refusals.ts).
    if (!who && c.status >= 400 && c.note?.startsWith("egress: ")) {
      this.recorder.refused({
        at: c.at,
        from: c.src,
        reason: clean(c.note),
        status: c.status,
        taskId: null,
        taskRef: null,
        method: c.method,
        path: clean(`egress:${c.host}:${c.port}`),
      });
      return;
    }
    this.recorder.record({
      at: c.at,
      taskId: who?.taskId ?? null,
      taskRef: who?.taskRef ?? null,
      role: "egress",
      profile: null,
      credential: null,
      upstream: clean(`egress:${c.host}:${c.port}`),
      method: c.method,
      path: clean(c.path),
      status: c.status,
      durationMs: c.durationMs,
      ttfbMs: null,
      bytesIn: c.bytesIn,
      bytesOut: c.bytesOut,
      usage: null,
      retries: 0,
      note: c.note,
      hop: 0,
      lazyInMs: null,
      lazyOutMs: null,
    });
  }
}

/**
 * Who is on the gateway's own network (its interface's address and netmask): the project's
 * containers. Containers of other Docker networks reach the gateway's address too (it is the
 * host's); they are refused. The bridge may get its address
 * after lazy listens (Docker brings it up with the first container): looked up until found.
 */
function subnetOf(gateway: string): (src: string) => boolean {
  const v4 = (a: string) => a.split(".").reduce((n, x) => ((n << 8) | Number(x)) >>> 0, 0);
  let mask: number | undefined;
  return (raw) => {
    const src = raw.replace(/^::ffff:/i, "");
    if (src === gateway) return true;
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(src)) return false;
    if (mask === undefined)
      for (const list of Object.values(networkInterfaces()))
        for (const i of list ?? []) if (i.family === "IPv4" && i.address === gateway) mask = v4(i.netmask);
    return mask !== undefined && (v4(src) & mask) >>> 0 === (v4(gateway) & mask) >>> 0;
  };
}
