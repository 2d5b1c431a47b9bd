/**
 * The CLI's way to the daemon. It finds the running daemon from its record (daemon.json), starts
 * one when needed (two racing commands start exactly one: the daemon's lock decides), and
 * speaks to its API with the token. The CLI never writes the store itself.
 *
 * Two things every command says on stderr, once, without costing the usual path a round trip:
 * a daemon of another version (daemon.json names it; a newer CLI restarts an older daemon when
 * nothing runs, otherwise says to run lazy daemon restart), and a lazy.toml the daemon could not
 * use (its answers carry x-lazy-config; only then is /api/status asked for the lines).
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { Engine } from "../containers";
import { type Busy, type DaemonRecord, type DaemonStatus, Keeper, State, Title } from "../daemon";
import { engineFinding, gitFinding, refuseOn, skipped } from "../preflight";
import { LazyError } from "../util/errors";
import { ensurePrivateDir } from "../util/files";
import { urlHost } from "../util/url";
import { VERSION } from "../version";
import * as Versions from "./versions";
import { say } from "./voice";
import { inOurWords } from "./words";

/** fetch's codes for a connection that was never made: whatever was asked reached no one. */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "ConnectionRefused", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);

/** The config warning is said once per command, however many requests it makes. */
let configNoted = false;

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

  /** Set by `launching()`: an add that takes a while says what the daemon's preflight is doing. */
  preflight = false;

  async request<T>(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<T> {
    // The daemon checks the engine, image and harness before it stores a task (src/preflight): a
    // slow engine connection (ssh) or a pull is said rather than silent.
    const slow =
      this.preflight && method === "POST" && (path === "/api/tasks" || path === "/api/groups")
        ? setTimeout(
            () =>
              say.info(
                `Connecting to the Docker engine at ${this.record.docker?.host ?? "the daemon's engine"}… (the launch's preflight: the engine, the image, the harness)`,
              ),
            2000,
          )
        : undefined;
    try {
      return await this.requestNow<T>(method, path, body, timeoutMs);
    } finally {
      clearTimeout(slow);
    }
  }

  private async requestNow<T>(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<T> {
    let res: Response | undefined;
    if (!this.verified) {
      let failed: unknown;
      res = await this.send(method, path, body, timeoutMs).catch((e: unknown) => {
        failed = e;
        return undefined;
      });
      const pid = res?.headers.get("x-lazy-pid");
      // A write is sent twice only when the first surely did nothing: nothing listened, or what
      // answered was no daemon of this project (no pid of lazy's, or our token refused; the
      // keeper holding the port while a daemon comes back answers 503 without a pid). A
      // daemon that died while it worked on it (lazy ask's call had begun), or one that came
      // back since the record was read and took it, has done it or part of it: its word stands.
      const write = method !== "GET" && method !== "HEAD";
      const taken = res ? !!pid && res.status !== 401 : !(failed as { refused?: boolean } | undefined)?.refused;
      if (write && taken && pid !== String(this.record.pid)) {
        if (!res)
          throw new LazyError(
            "daemon_unavailable",
            `${(failed as Error).message} lazy did not send it again: the daemon may have done it, or part of it, before it stopped; look (lazy task list), then run the command again if it is still wanted.`,
          );
        this.record = State.readRecord(State.paths(this.root)) ?? this.record;
      } else if (!res || pid !== String(this.record.pid)) {
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
    if (!res.ok) throw inOurWords(LazyError.fromJSON(json, `The daemon answered ${res.status} to ${method} ${path}.`));
    return json as T;
  }

  async send(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Response> {
    const res = await this.raw(method, path, body, timeoutMs);
    await this.noteConfig(res);
    return res;
  }

  private raw(method: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Response> {
    // The daemon takes a state-changing request only as JSON (daemon/api-guard.ts), so even a
    // bodiless POST sends an empty object.
    const write = method !== "GET" && method !== "HEAD";
    return fetch(this.url + path, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(write ? { "content-type": "application/json" } : {}) },
      body: write ? JSON.stringify(body ?? {}) : undefined,
      // 0: no deadline (a live stream, lazy watch).
      signal: timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined,
      // The daemon is on this machine: never through the host's HTTP_PROXY (Bun's fetch does
      // not skip loopback by itself), which would get the API token and could not reach it.
      proxy: false,
    }).catch((e) => {
      const err = new LazyError(
        "daemon_unavailable",
        `The daemon stopped answering (${(e as Error).message}); run lazy daemon status, or lazy daemon logs.`,
      );
      // No connection was made: the request never reached a daemon (request() may send it again).
      return Promise.reject(Object.assign(err, { refused: NOT_CONNECTED.has((e as { code?: string }).code ?? "") }));
    });
  }

  /**
   * The daemon re-checks lazy.toml before each answer and marks it while the file is broken or
   * untrusted: say so on stderr (stdout stays the command's data), once, with the lines.
   */
  private async noteConfig(res: Response): Promise<void> {
    const mark = res.headers.get("x-lazy-config");
    if (!mark || configNoted || res.headers.get("x-lazy-pid") !== String(this.record.pid)) return;
    configNoted = true;
    let c: DaemonStatus["config"] | undefined;
    try {
      const r = await this.raw("GET", "/api/status", undefined, 2000);
      if (r.ok) c = ((await r.json()) as DaemonStatus).config;
    } catch {}
    say.warn(configNote(mark === "untrusted", join(this.root, "lazy.toml"), c));
  }

  /** The daemon's own word on its version and what a restart would cut; undefined if it is not ours. */
  async health(): Promise<{ version: string; busy?: Busy } | undefined> {
    try {
      const res = await this.raw("GET", "/api/health", undefined, 2000);
      const h = (await res.json()) as { version?: unknown; busy?: Busy };
      if (!res.ok || res.headers.get("x-lazy-pid") !== String(this.record.pid) || typeof h.version !== "string") return undefined;
      this.verified = true;
      return { version: h.version, busy: h.busy };
    } catch {
      return undefined;
    }
  }
}

/** What a command says while lazy.toml is broken or untrusted: where, each line:col, and what is in use. */
function configNote(untrusted: boolean, file: string, c: DaemonStatus["config"] | undefined): string {
  const since = c ? ` (loaded ${c.loadedAt})` : "";
  if (untrusted) {
    // The daemon's first line is the trust refusal itself (the path, and lazy trust); then each key.
    const [head, ...lines] = c?.problems ?? [];
    return [
      head ?? `${file} changed and is not trusted; look at it, then run lazy trust in ${dirname(file)}.`,
      ...lines.map((l) => `  ${l}`),
      `Until then the daemon keeps using the last trusted config${since}.`,
    ].join("\n");
  }
  return [
    `${c?.file ?? file} is broken; the daemon keeps using the last good config${since} until it loads:`,
    ...(c?.problems ?? ["(lazy daemon status shows the lines)"]).map((l) => `  ${l}`),
  ].join("\n");
}

/** How to run this same lazy again (the daemon, the keeper's child, a service unit). */
export function selfCommand(): string[] {
  // Linux names a binary replaced while it runs (an upgrade, a rebuild) "<path> (deleted)";
  // the daemon should start from what is at that path now.
  const exe = process.execPath.replace(/ \(deleted\)$/, "");
  // Compiled, the binary is the whole program; from source (development) run the entry file.
  return Bun.main.startsWith("/$bunfs") || !/\.[cm]?[jt]s$/.test(Bun.main) ? [exe] : [exe, Bun.main];
}

async function reachable(root: string, p: State.StatePaths): Promise<Client | undefined> {
  const record = State.readRecord(p);
  const token = State.readToken(p);
  // A pid reused since the daemon died names no daemon of ours: it gets no token (isDaemon).
  if (!record || !token || !State.isDaemon(p, record.pid)) return undefined;
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

/** The running daemon's record (daemon.json), if a daemon of this user holds it; nothing is asked or started. */
export function recordOf(root: string): DaemonRecord | undefined {
  const p = State.paths(root);
  try {
    const r = State.readRecord(p);
    return r && State.isDaemon(p, r.pid) ? r : undefined;
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
  if (record && token && State.isDaemon(p, record.pid)) {
    // The version is in the record already read: the usual path adds no round trip.
    if (record.version !== VERSION) return meetVersion(root, p, record, token);
    return new Client(root, record, token, false);
  }
  return start(root);
}

/** How long an add may take: the daemon's preflight may pull a named image first (src/preflight). */
export const LAUNCH_TIMEOUT_MS = 15 * 60_000;

/**
 * The project's daemon, for a launch (task add, start, send, run, a group): first the preflight's
 * checks only this shell can make (src/preflight) — the folder is a git repository with a commit,
 * asked before a daemon is started for it; this shell's Docker engine is the daemon's (daemon.json
 * says which, no round trip). The daemon checks the rest before it stores a task.
 */
export async function launching(root: string): Promise<Client> {
  if (skipped()) return connect(root);
  refuseOn([gitFinding(root)]);
  const c = await connect(root);
  const engine = engineFinding(c.record.docker, Engine.resolve());
  if (engine) refuseOn([engine]);
  c.preflight = true;
  return c;
}

/**
 * The running daemon was started by another lazy (daemon.json says so). Ask the daemon itself
 * (the record may be stale), say so, and when this lazy is the newer and nothing would be cut,
 * restart it with this binary: the store migrates forward at its start, tasks and grants stay.
 * Otherwise carry on with it and say what to run once its turns end.
 */
async function meetVersion(root: string, p: State.StatePaths, record: DaemonRecord, token: string): Promise<Client> {
  const c = new Client(root, record, token, false);
  const h = await c.health();
  // Not ours after all (a dead or foreign listener): the usual path starts ours.
  if (!h) return start(root);
  if (h.version === VERSION) return c;
  const them = `the daemon (pid ${record.pid}) runs lazy ${h.version} and this is lazy ${VERSION}`;
  if (Versions.compare(VERSION, h.version) < 0) {
    say.warn(`${them}, an older one: carrying on with the newer daemon. Use the newer lazy, or run lazy daemon restart to run this one.`);
    return c;
  }
  // A daemon from before /api/health said what runs: its running tasks, from the counts.
  const busy =
    h.busy ??
    (await c
      .request<{ running?: number }>("GET", "/api/counts")
      .then((n) => ({ turns: n.running ?? 0, requests: 0 }))
      .catch(() => undefined));
  if (!busy) {
    say.warn(`${them}; lazy cannot tell whether a turn runs, so it carries on with it: once none does, run lazy daemon restart.`);
    return c;
  }
  if (busy.turns || busy.requests) {
    const what = [
      busy.turns ? `${busy.turns} turn${busy.turns === 1 ? " is" : "s are"} running` : "",
      busy.requests ? `${busy.requests} request${busy.requests === 1 ? " is" : "s are"} under way` : "",
    ].filter(Boolean);
    say.warn(`${them}; ${what.join(" and ")}, so lazy carries on with it: once they end, run lazy daemon restart.`);
    return c;
  }
  // A new daemon starts only on a lazy.toml that loads and is trusted: keep the old one otherwise.
  const { Trust } = await import("../config");
  const checked = Trust.check(root);
  if (!checked.ok) {
    say.warn(
      `${them}; lazy would restart it, but ${checked.file} ${checked.untrusted ? "is not trusted (lazy trust)" : "does not load"}, so it carries on with the old daemon: fix that, then run lazy daemon restart.`,
    );
    return c;
  }
  say.warn(`${them}: restarting it (no turn is running).`);
  // Two commands meeting the old daemon at once restart it once: the second finds the new one.
  const { lock } = await import("../util/flock");
  const held = await lock(join(p.dir, "upgrade.lock"), 30_000).catch(() => {
    throw new LazyError(
      "daemon_failed",
      "Another lazy command is restarting the daemon and did not finish within 30 s; run lazy daemon status.",
    );
  });
  try {
    const now = State.readRecord(p);
    if (now && now.pid !== record.pid && now.version === VERSION && State.isDaemon(p, now.pid)) return new Client(root, now, token, false);
    if (now?.pid === record.pid) await stop(root, { containers: false });
    const fresh = await start(root);
    say.info(`The daemon is now lazy ${VERSION} (pid ${fresh.record.pid}); its tasks and state carried over.`);
    return fresh;
  } finally {
    held.release();
  }
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
    // What ps shows: the keeper, or the daemon itself when there is none (daemon/title.ts).
    argv0: Title.argv0(process.env.LAZY_KEEPER === "0" ? "daemon" : "keeper", root),
    detached: true,
    stdio: ["ignore", fd, fd],
    env: {
      ...process.env,
      LAZY_DAEMON_DETACHED: "1",
      LAZY_PROJECT: root,
      // fetch runs at most 256 requests at once unless told at process start (docs/wire.md, "Runtime traps").
      BUN_CONFIG_MAX_HTTP_REQUESTS: process.env.BUN_CONFIG_MAX_HTTP_REQUESTS ?? "4096",
      // Bun's allocator (mimalloc) hands freed pages back to the kernel after a few ms by default:
      // under proxy load that is a madvise per few dozen requests, each a TLB shootdown across the
      // daemon's threads (~15 % of req/s, bench/README.md). Ten minutes puts that off as far as
      // "never" (-1) did for the request path, but unlike -1 lets memory go back: after large
      // request bodies the proxy thread collects (proxy/listen/gate.ts), and their freed memory returned
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
    return inOurWords(LazyError.fromJSON(JSON.parse(readFileSync(p.startupError, "utf8")), "The daemon failed to start."));
  } catch {
    return undefined;
  }
}

/**
 * Stop the project's daemon (politely, then by force) and its keeper, and wait until both are
 * gone. `containers`: the daemon also stops the project's task containers and removes its
 * network (lazy daemon stop); false leaves turns running for the next daemon to pick up
 * (lazy daemon restart, an upgrade), as a crash would.
 */
export async function stop(root: string, { containers = true } = {}): Promise<{ pid: number } | undefined> {
  const p = State.paths(root);
  const keeper = await Keeper.running(p);
  const record = State.readRecord(p);
  // A process that got the record's pid since the daemon died is no daemon to stop: no signal.
  if (!record || !State.isDaemon(p, record.pid)) {
    if (record) State.clearRecord(p, record.pid);
    // A keeper between two daemons (or giving up): told to stop, it starts none.
    if (keeper) signal(keeper.pid, "SIGTERM");
    if (keeper) await gone(keeper.pid);
    return undefined;
  }
  // A daemon that stops by itself ends with 0, and its keeper with it.
  const c = await reachable(root, p);
  if (c) await c.request("POST", "/api/daemon/stop", { containers: containers ? "stop" : "leave" }, 30_000).catch(() => {});
  else {
    // Told to stop first, the keeper takes the daemon's end for no crash (keeper.ts).
    if (keeper) signal(keeper.pid, "SIGTERM");
    signal(record.pid, "SIGTERM");
  }
  const deadline = Date.now() + (containers ? 30_000 : 10_000);
  while (State.isAlive(record.pid) && Date.now() < deadline) await Bun.sleep(20);
  if (State.isAlive(record.pid)) {
    if (keeper) signal(keeper.pid, "SIGTERM");
    signal(record.pid, "SIGKILL");
    const hard = Date.now() + 5_000;
    while (State.isAlive(record.pid) && Date.now() < hard) await Bun.sleep(20);
  }
  // A daemon killed by force leaves its record behind.
  rmSync(p.record, { force: true });
  if (keeper) await gone(keeper.pid);
  return { pid: record.pid };
}

/** Wait (bounded) for a keeper told to stop to end, by force at last. */
async function gone(pid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (State.isAlive(pid) && Date.now() < deadline) await Bun.sleep(20);
  if (State.isAlive(pid)) signal(pid, "SIGKILL");
}

/** Signal a process that may have ended meanwhile (a keeper ends with its daemon): gone is no error. */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
  }
}
