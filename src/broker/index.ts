/**
 * The broker: lazy's promise that an agent never holds a real credential, extended from model
 * keys to any HTTPS service a project names in `[[service]]` (a git host, a package registry).
 * A task's container holds a placeholder per service, shaped like the real token, in the places
 * tools look (container.ts); lazy's egress proxy answers a CONNECT to a brokered host itself,
 * checks the ClientHello's SNI against it and hands the TLS to the terminator (terminator.ts),
 * which holds a certificate from the project's own CA (ca.ts: its key stays in the daemon's
 * state folder, never in a container). There the task's placeholder is swapped for the real
 * secret (sources.ts: a stored credential, a host command, a GitHub App's per-task token) and
 * the request goes on to the real host (forward.ts). Every other host stays an uninspected
 * tunnel.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import type { Config } from "../config";
import { type Brokered, formsOf } from "../egress";
import * as Git from "../git";
import { HostNet } from "../network";
import { type AuditBatch, AuditRecorder, type AuditRefusalTally, type Grant } from "../proxy";
import { writeFileAtomic } from "../util/files";
import type { Logger } from "../util/log";
import { ensureCa, leaf } from "./ca";
import { containerShare } from "./container";
import { type Caller, forward, type Row } from "./forward";
import { allHosts, placeholderShape, serviceFor, servicesOf, speaksGit } from "./services";
import { clientHello } from "./sni";
import { Sources } from "./sources";
import type { Known } from "./swap";
import { Terminator } from "./terminator";
import type { Service } from "./types";

export * as Share from "./container";
export type { Row as BrokerRow } from "./forward";
export * as GitRules from "./git";
export { allHosts, placeholderShape, serviceFor, servicesOf, speaksGit } from "./services";
export type { Service, Shape, SourceSpec } from "./types";

/** Where a task container finds the broker's files (an .npmrc, a docker config): read-only. */
export const BROKER_MOUNT = "/lazy/broker";

export interface BrokerDeps {
  root: string;
  stateDir: string;
  config: () => Config;
  grants: {
    all(): Grant[];
    version(): number;
    mint(identity: {
      role: "agent";
      taskId: string;
      taskRef: string;
      profile: string;
      envVar: string;
      shape: Grant["shape"];
    }): Readonly<Grant>;
  };
  /** A stored credential's value. */
  credential(name: string): string | undefined;
  /** The branch suffix of a task (its code, or its id): a push may go to refs/heads/lazy/<it>. */
  branchOf(taskId: string): string | null;
  /** The proxy's audit trail: each brokered request is a row (role "broker", the service as its profile). */
  audit: { write(batch: AuditBatch): void; refused(tally: AuditRefusalTally): void };
  /** Whether the task's grants redeem now (one of its turns runs). */
  live(taskId: string): boolean;
  /** Said in the task's events and lazy watch (a source that failed, an answer cut). */
  tell(taskId: string | null, service: string, what: string): void;
  log: Logger;
  /** Names resolved to addresses (LAZY_RESOLVE: tests that serve a name on loopback). */
  resolve?: Record<string, string>;
  /** The host's proxy for an https origin (the daemon's HTTPS_PROXY), or false. */
  proxy?: (host: string, port: number) => string | false;
}

export class Broker {
  private terminator: { key: string; t: Terminator; renewAt: number } | undefined;
  private sources: Sources;
  private recorder: AuditRecorder;
  /** The secret last swapped in per task and service (task id NUL service): answers are checked for it. */
  private last = new Map<string, string>();

  constructor(private d: BrokerDeps) {
    this.recorder = new AuditRecorder(
      (b) => d.audit.write(b),
      (t) => d.audit.refused(t),
    );
    this.sources = new Sources({
      credential: async (name) => d.credential(name) ?? null,
      log: d.log,
      cwd: d.root,
      // A GitHub App's API goes the way brokered requests do: a LAZY_RESOLVE address under its
      // name, and the host's proxy when it has one.
      fetch: (input, init) => {
        const u = new URL(input);
        const address = d.resolve?.[u.hostname];
        if (address) {
          const at = new URL(input);
          at.hostname = address;
          return fetch(at, { ...init, tls: { serverName: u.hostname } } as RequestInit);
        }
        const proxy = d.proxy?.(u.hostname, Number(u.port || 443));
        return fetch(input, { ...init, proxy: proxy || undefined } as RequestInit);
      },
    });
  }

  services(): Service[] {
    return servicesOf(this.d.config());
  }

  /** The project's CA (made on first use): its certificate is public, its key never leaves the state folder. */
  ca(): { cert: string; key: string; hash: string } {
    return ensureCa(join(this.d.stateDir, "broker"));
  }

  /**
   * The egress proxy's question for a CONNECT: brokered? Then where to pipe its TLS (the
   * terminator, started or restarted with a certificate for the hosts as configured now).
   */
  route(src: string, host: string, port: number): { port: number; brokered: Brokered } | null {
    const services = this.services();
    if (!serviceFor(services, host, port)) return null;
    const t = this.running(services);
    // This connection's own: closing it forgets only it, never a newer tunnel on the same port.
    const tunnel = { src, host, port };
    return {
      port: t.port,
      brokered: {
        hello: (bytes) => {
          const r = clientHello(bytes);
          if ("need" in r) return "need";
          if ("bad" in r) return `the tunnel to ${host}:${port} did not start with a TLS ClientHello (${r.bad})`;
          if (r.sni === null) return isIP(host) ? null : `the ClientHello names no server (SNI) in a tunnel to ${host}:${port}`;
          if (r.sni !== host)
            return `the ClientHello names ${r.sni.slice(0, 200)} in a tunnel to ${host}:${port}: a tunnel carries only its own host`;
          return null;
        },
        open: (lp) => t.open(lp, tunnel),
        close: (lp) => t.close(lp, tunnel),
      },
    };
  }

  private running(services: Service[]): Terminator {
    const hosts = allHosts(services);
    const key = hosts.join(",");
    if (this.terminator?.key === key && Date.now() < this.terminator.renewAt) return this.terminator.t;
    const ca = this.ca();
    const cert = leaf(ca, hosts);
    const t = new Terminator(cert, (req, tunnel) => forward(this.forwardDeps(), req, tunnel));
    // Tunnels open on the old one finish there; it is stopped once they had time to.
    const old = this.terminator?.t;
    if (old) setTimeout(() => old.stop(), 60_000).unref?.();
    // A week before the leaf lapses, the next tunnel gets a new one.
    this.terminator = { key, t, renewAt: cert.notAfter.getTime() - 7 * 86_400_000 };
    this.d.log.info(`broker: TLS for ${hosts.join(", ")} ends at 127.0.0.1:${t.port}`);
    return t;
  }

  private forwardDeps() {
    const d = this.d;
    return {
      service: (host: string, port: number) => serviceFor(this.services(), host, port),
      caller: (src: string): Caller | null => {
        const ip = src.replace(/^::ffff:/i, "");
        const g = d.grants.all().find((x) => x.role === "agent" && x.taskId && x.pinnedIp === ip);
        if (!g?.taskId || !d.live(g.taskId)) return null;
        return { taskId: g.taskId, taskRef: d.branchOf(g.taskId) ?? g.taskRef ?? g.taskId };
      },
      placeholder: (taskId: string, service: string) =>
        d.grants.all().find((g) => g.taskId === taskId && g.profile === `service:${service}`)?.token ?? null,
      find: (text: string): Known | undefined => {
        for (const g of d.grants.all())
          if (text.includes(g.token))
            return {
              token: g.token,
              who: g.profile.startsWith("service:")
                ? `task ${g.taskRef ?? g.taskId}'s placeholder for ${g.profile.slice(8)}`
                : `${g.taskRef ? `task ${g.taskRef}'s` : `lazy's ${g.role}`} model placeholder (profile ${g.profile})`,
            };
        return undefined;
      },
      lastSecret: (svc: Service, c: Caller) => this.last.get(`${c.taskId}\u0000${svc.name}`) ?? null,
      secret: async (svc: Service, c: Caller) => {
        const repos = svc.repos.length ? svc.repos : [this.originRepo()].filter((r): r is string => !!r);
        const value = (await this.sources.get(svc.name, svc.source, { id: c.taskId, repos })).value;
        this.last.set(`${c.taskId}\u0000${svc.name}`, value);
        return value;
      },
      forms: (secret: string) => formsOf(secret).map((f) => f.text),
      originRepo: () => this.originRepo(),
      address: (host: string) => d.resolve?.[host] ?? null,
      proxy: (host: string, port: number) => d.proxy?.(host, port) ?? false,
      record: (row: Row) => this.record(row),
      tell: (c: Caller | null, service: string, what: string) => d.tell(c?.taskId ?? null, service, what),
    };
  }

  private record(r: Row): void {
    this.recorder.record({
      at: r.at,
      taskId: r.task?.taskId ?? null,
      taskRef: r.task?.taskRef ?? null,
      role: "broker",
      profile: r.service,
      credential: null,
      upstream: `broker:${r.host}:${r.port}`,
      method: r.method,
      path: r.path,
      status: r.status,
      durationMs: r.durationMs,
      ttfbMs: null,
      bytesIn: r.bytesIn,
      bytesOut: r.bytesOut,
      usage: null,
      retries: 0,
      note: r.note,
      hop: 0,
      lazyInMs: null,
      lazyOutMs: null,
    });
  }

  /** The project's origin repository as "owner/name" (lower case), from `git remote get-url origin`. */
  originRepo(): string | null {
    if (this.origin && Date.now() - this.origin.at < 60_000) return this.origin.repo;
    let repo: string | null = null;
    try {
      const url = Git.git(this.d.root, ["remote", "get-url", "origin"], { allowFail: true }).out.trim();
      const m = /^(?:https?:\/\/[^/]+\/|[^@]+@[^:]+:|ssh:\/\/[^/]+\/)(.+?)(?:\.git)?\/?$/.exec(url);
      repo = m ? m[1]!.toLowerCase() : null;
    } catch {}
    this.origin = { at: Date.now(), repo };
    return repo;
  }
  private origin: { at: number; repo: string | null } | undefined;

  /**
   * A task container's share for this turn: a placeholder per service (minted once per task and
   * service, kept across turns), the variables tools read, and the files (written to the task's
   * broker folder, mounted read-only at BROKER_MOUNT).
   */
  forTask(task: { id: string; ref: string }, folder: string): Record<string, string> {
    const services = this.services();
    if (!services.length) return {};
    const placeholders = new Map<string, string>();
    for (const s of services) {
      const g = this.d.grants.mint({
        role: "agent",
        taskId: task.id,
        taskRef: task.ref,
        profile: `service:${s.name}`,
        envVar: `LAZY_SERVICE_${s.name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`,
        shape: placeholderShape(s),
      });
      placeholders.set(s.name, g.token);
    }
    const share = containerShare(services, placeholders, { caPath: HostNet.CA_PATH, mount: BROKER_MOUNT });
    mkdirSync(folder, { recursive: true, mode: 0o755 });
    for (const f of share.files) writeFileAtomic(join(folder, f.name), f.content, f.mode);
    return share.env;
  }

  /**
   * The CA bundle a task container mounts when services are brokered: the host's bundle (its
   * extra CAs, or the system's roots) and the project's CA, one file in the state folder.
   */
  bundle(hostBundle: string | null): string | null {
    if (!this.services().length) return hostBundle;
    const ca = this.ca();
    const base = hostBundle ?? (existsSync(SYSTEM_BUNDLE) ? SYSTEM_BUNDLE : null);
    const text = `${base ? readFileSync(base, "utf8").trimEnd() : ""}\n${ca.cert.trim()}\n`;
    const file = join(this.d.stateDir, "broker", `bundle-${Bun.hash(text).toString(16)}.pem`);
    if (!existsSync(file)) writeFileSync(file, text, { mode: 0o644 });
    return file;
  }

  /** For lazy doctor and lazy watch: each service's hosts, source and its last outcome. */
  status() {
    const last = new Map(this.sources.status().map((s) => [s.service, s]));
    return this.services().map((s) => ({
      name: s.name,
      shape: s.shape,
      hosts: s.hosts,
      source:
        s.source.kind === "credential"
          ? `credential ${s.source.name}`
          : s.source.kind === "command"
            ? `command ${s.source.argv.join(" ")}`
            : `GitHub App ${s.source.appId} key ${s.source.key}`,
      push: s.push,
      git: speaksGit(s),
      last: last.get(s.name) ?? null,
    }));
  }

  forgetTask(taskId: string): void {
    this.sources.forgetTask(taskId);
    for (const k of this.last.keys()) if (k.startsWith(`${taskId}\u0000`)) this.last.delete(k);
  }

  stop(): void {
    this.terminator?.t.stop();
    this.terminator = undefined;
    this.recorder.flush();
  }
}

const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";
