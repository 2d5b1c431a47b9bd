/**
 * The CLI's way to the daemon. It finds the running daemon from its record (daemon.json), starts
 * one when needed (two racing commands start exactly one: the daemon's lock decides), and
 * speaks to its API with the token. The CLI never writes the store itself.
 */
import { spawn } from "node:child_process";
import { openSync, closeSync, readFileSync, existsSync, rmSync } from "node:fs";
import { LazyError } from "../util/errors";
import { ensurePrivateDir } from "../util/files";
import { urlHost } from "../util/url";
import { State, type DaemonRecord } from "../daemon";
import { STANDARD } from "../credentials";

export class Client {
  /**
   * Unverified: found from the daemon's record but not asked yet. The first request checks the
   * daemon's pid on the answer; a dead or foreign listener means starting ours and asking again.
   * That spares every command a separate health round trip.
   */
  private verified: boolean;

  constructor(
    readonly root: string,
    public record: DaemonRecord,
    private token: string,
    verified = true,
  ) {
    this.verified = verified;
  }

  get url(): string {
    const h = this.record.api.host === "0.0.0.0" ? "127.0.0.1" : this.record.api.host === "::" ? "::1" : this.record.api.host;
    return `http://${urlHost(h)}:${this.record.api.port}`;
  }

  get authToken(): string {
    return this.token;
  }

  async request<T>(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<T> {
    let res: Response | undefined;
    if (!this.verified) {
      res = await this.send(method, path, body, timeoutMs).catch(() => undefined);
      if (!res || res.headers.get("x-lazy-pid") !== String(this.record.pid)) {
        await res?.arrayBuffer();
        const fresh = await start(this.root);
        this.record = fresh.record;
        this.token = fresh.token;
        res = undefined;
      }
      this.verified = true;
    }
    res ??= await this.send(method, path, body, timeoutMs);
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (!res.ok) throw exported(LazyError.fromJSON(json, `The daemon answered ${res.status} to ${method} ${path}.`));
    return json as T;
  }

  send(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Response> {
    // The daemon takes a state-changing request only as JSON (daemon/api-guard.ts), so even a
    // bodiless POST sends an empty object.
    const write = method !== "GET" && method !== "HEAD";
    return fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(write ? { "content-type": "application/json" } : {}) },
      body: write ? JSON.stringify(body ?? {}) : undefined,
      // 0: no deadline (a live stream, lazy watch).
      signal: timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined,
    }).catch((e) => {
      throw new LazyError(
        "daemon_unavailable",
        `The daemon stopped answering (${(e as Error).message}); run lazy daemon status, or lazy daemon logs.`,
      );
    });
  }
}

function selfCommand(): string[] {
  // Linux names a binary replaced while it runs (an upgrade, a rebuild) "<path> (deleted)";
  // the daemon should start from what is at that path now.
  const exe = process.execPath.replace(/ \(deleted\)$/, "");
  // Compiled, the binary is the whole program; from source (development) run the entry file.
  return Bun.main.startsWith("/$bunfs") || !/\.[cm]?[jt]s$/.test(Bun.main) ? [exe] : [exe, Bun.main];
}

async function reachable(root: string, p: State.StatePaths): Promise<Client | undefined> {
  const record = State.readRecord(p);
  const token = State.readToken(p);
  if (!record || !token || !State.isAlive(record.pid)) return undefined;
  const c = new Client(root, record, token);
  try {
    // Every answer names the daemon's pid: a port reused by another process is not ours.
    const res = await c.send("GET", "/api/health", undefined, 2000);
    await res.arrayBuffer();
    return res.ok && res.headers.get("x-lazy-pid") === String(record.pid) ? c : undefined;
  } catch {
    return undefined;
  }
}

/** The running daemon, if any: never starts one. */
export async function running(root: string): Promise<Client | undefined> {
  return reachable(root, State.paths(root));
}

/** The project's daemon, started when none runs. */
export async function connect(root: string): Promise<Client> {
  const p = State.paths(root);
  const record = State.readRecord(p);
  const token = State.readToken(p);
  if (record && token && State.isAlive(record.pid)) return new Client(root, record, token, false);
  return start(root);
}

export async function start(root: string): Promise<Client> {
  const p = State.paths(root);
  // Refuse here, with the exact lines, rather than leave the user to find them in a log; and
  // an untrusted lazy.toml before any daemon exists to use it (config/trust.ts).
  const { Trust } = await import("../config");
  const checked = Trust.check(root);
  if (!checked.ok) throw checked.error;
  ensurePrivateDir(p.dir);
  const fd = openSync(p.log, "a", 0o600);
  const [cmd, ...args] = selfCommand();
  const child = spawn(cmd!, [...args, "daemon", "run"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", fd, fd],
    env: {
      ...process.env,
      LAZY_DAEMON_DETACHED: "1",
      LAZY_PROJECT: root,
      // fetch runs at most 256 requests at once unless told at process start (TRAPS.md).
      BUN_CONFIG_MAX_HTTP_REQUESTS: process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? "4096",
      // Bun's allocator (mimalloc) hands freed pages back to the kernel after a few ms by default:
      // under proxy load that is a madvise per few dozen requests, each a TLB shootdown across the
      // daemon's threads (~15 % of req/s, bench/README.md). Ten minutes puts that off as far as
      // "never" (-1) did for the request path, but unlike -1 lets memory go back: after large
      // request bodies the proxy thread collects (proxy/gate.ts), and their freed memory returned
      // within seconds here (four 120 MiB uploads: 90 → 403 → 92 MB; with -1 it stayed at 483).
      MIMALLOC_PURGE_DELAY: process.env.MIMALLOC_PURGE_DELAY ?? "600000",
    },
  });
  closeSync(fd);
  let exitCode: number | null = null;
  let spawnError: Error | undefined;
  child.on("exit", (code) => {
    exitCode = code ?? 1;
  });
  child.on("error", (e) => {
    spawnError = e;
  });
  child.unref();

  const deadline = Date.now() + 20_000;
  for (let delay = 5; Date.now() < deadline; delay = Math.min(delay * 2, 50)) {
    await Bun.sleep(delay);
    const c = await reachable(root, p);
    if (c) return c;
    if (spawnError) throw new LazyError("daemon_failed", `Could not start the daemon (${cmd}): ${spawnError.message}.`);
    if (exitCode !== null && exitCode !== 0) {
      const err = readStartupError(p);
      if (err) throw err;
      throw new LazyError("daemon_failed", `The daemon exited with code ${exitCode} while starting; see ${p.log}.`);
    }
  }
  throw new LazyError("daemon_failed", `The daemon did not become ready within 20 s; see ${p.log}.`);
}

function readStartupError(p: State.StatePaths): LazyError | undefined {
  if (!existsSync(p.startupError)) return undefined;
  try {
    return LazyError.fromJSON(JSON.parse(readFileSync(p.startupError, "utf8")), "The daemon failed to start.");
  } catch {
    return undefined;
  }
}

/** Stop the project's daemon (politely, then by force) and wait until it is gone. */
export async function stop(root: string): Promise<{ pid: number } | undefined> {
  const p = State.paths(root);
  const record = State.readRecord(p);
  if (!record || !State.isAlive(record.pid)) {
    if (record) State.clearRecord(p, record.pid);
    return undefined;
  }
  const c = await reachable(root, p);
  if (c) await c.request("POST", "/api/daemon/stop").catch(() => {});
  else process.kill(record.pid, "SIGTERM");
  const deadline = Date.now() + 10_000;
  while (State.isAlive(record.pid) && Date.now() < deadline) await Bun.sleep(20);
  if (State.isAlive(record.pid)) {
    process.kill(record.pid, "SIGKILL");
    const hard = Date.now() + 5_000;
    while (State.isAlive(record.pid) && Date.now() < hard) await Bun.sleep(20);
  }
  // A daemon killed by force leaves its record behind.
  rmSync(p.record, { force: true });
  return { pid: record.pid };
}

/**
 * A credential "not stored" while this shell exports its variable: the daemon (started from
 * another shell, or before the export) does not have it. Say exactly that, and the two fixes;
 * the value itself is never read here beyond its presence.
 */
function exported(e: LazyError): LazyError {
  if (e.code !== "credential_missing") return e;
  for (const [name, variable] of Object.entries(STANDARD)) {
    if (!e.message.includes(`"${name}" credential`) || !process.env[variable]) continue;
    return new LazyError(
      e.code,
      `${e.message.replace(/\.$/, "")}. This shell exports ${variable}, but the running daemon was started without it: run lazy daemon restart from this shell, or store it with lazy auth set ${name}.`,
      e.details,
    );
  }
  return e;
}
