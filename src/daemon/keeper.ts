/**
 * The keeper: a small parent process (`lazy daemon run`) that runs the daemon as its child
 * (`LAZY_KEPT=1`) and starts it again when it dies without being told to stop (kill -9, the OOM
 * killer, an uncaught error), so running agents get their proxy back within about a second with
 * no human action. It holds no state and serves nothing: the new daemon finds its tasks, grants
 * and ports in the state folder as the old one left them.
 *
 * A crash loop backs off (0, 0.25, 1, 2 s) and gives up at the fifth crash within 60 s; why is
 * kept in crashes.json, which `lazy daemon status` and `lazy doctor` read. A daemon that refused
 * to start (a broken lazy.toml: startup-error.json) is not retried: a restart would refuse again.
 * One keeper a project (keeper.lock, a kernel flock): racing commands each spawn one, the losers
 * exit at once. `lazy daemon stop` signals the keeper first, so its stop is never a crash.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { readOwn, writeFileAtomic } from "../util/files";
import * as Log from "../util/log";
import { isAlive } from "../util/process";
import * as State from "./state";
import { argv0 } from "./title";

/** The fifth crash within this window is the last one the keeper answers. */
export const WINDOW_MS = 60_000;
export const MAX_CRASHES = 5;
/** Wait before the n-th respawn in the window (the first is at once: the 2 s promise). */
const BACKOFF_MS = [0, 250, 1000, 2000];

export interface KeeperRecord {
  pid: number;
  startedAt: string;
}

/** How the daemon ended: "signal SIGKILL" or "exit code 1". */
export interface Crash {
  at: string;
  exit: string;
}

/** crashes.json: the crashes in the current window, and the keeper's last word when it gave up. */
export interface Crashes {
  recent: Crash[];
  gaveUp?: { at: string; reason: string };
}

export function readKeeper(p: State.StatePaths): KeeperRecord | undefined {
  const r = readOwn(p.keeper);
  if (!r || !("text" in r)) return undefined;
  try {
    const k = JSON.parse(r.text) as KeeperRecord;
    return Number.isInteger(k?.pid) && k.pid > 0 ? k : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The keeper that runs now, if any: its record, and its lock held (a pid in a record left by a
 * keeper killed by force may since name another process, never to be signalled).
 */
export async function running(p: State.StatePaths): Promise<KeeperRecord | undefined> {
  const k = readKeeper(p);
  if (!k || !isAlive(k.pid)) return undefined;
  const { tryLock } = await import("../util/flock");
  const free = tryLock(p.keeperLock);
  if (!free) return k;
  free.release();
  return undefined;
}

export function readCrashes(p: State.StatePaths): Crashes | undefined {
  const r = readOwn(p.crashes);
  if (!r || !("text" in r)) return undefined;
  try {
    const c = JSON.parse(r.text) as Crashes;
    return Array.isArray(c?.recent) ? c : undefined;
  } catch {
    return undefined;
  }
}

/** One line on why the daemon is not running, when the keeper gave up on it. */
export function gaveUpLine(c: Crashes | undefined): string | undefined {
  return c?.gaveUp ? `${c.gaveUp.reason} (at ${c.gaveUp.at}); see lazy daemon logs` : undefined;
}

/**
 * Keep the daemon running until it stops cleanly or the keeper is told to stop. `daemon` is
 * the command that runs the daemon itself. Resolves to the exit code for the keeper.
 */
export async function keep(root: string, daemon: string[]): Promise<number> {
  const p = State.paths(root);
  // bun:ffi is loaded only here: every CLI command reads this file's records.
  const { tryLock } = await import("../util/flock");
  const lock = tryLock(p.keeperLock);
  if (!lock) return 0; // another keeper keeps this project's daemon
  const log = Log.create("keeper");
  writeFileAtomic(p.keeper, JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() } satisfies KeeperRecord));
  // Started by a person or a command: the crashes before it are history, not a loop in progress.
  rmSync(p.crashes, { force: true });
  let stopping = false;
  let child: ReturnType<typeof Bun.spawn> | undefined;
  for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const)
    process.on(sig, () => {
      stopping = true;
      child?.kill("SIGTERM");
    });
  const recent: Crash[] = [];
  let held: { stop(): void }[] = [];
  const release = () => {
    for (const h of held) h.stop();
    held = [];
  };
  try {
    for (;;) {
      const c: ReturnType<typeof Bun.spawn> = Bun.spawn(daemon, {
        cwd: root,
        stdio: ["ignore", "inherit", "inherit"],
        env: { ...process.env, LAZY_KEPT: "1" },
        argv0: argv0("daemon", root), // what ps shows (title.ts)
        // The new daemon asks for the ports the keeper holds for it just before it listens.
        ipc(m) {
          if ((m as { op?: string })?.op !== "release") return;
          release();
          c.send({ op: "released" });
        },
      });
      child = c;
      const code = await child.exited;
      const pid = child.pid;
      if (stopping || code === 0) return 0;
      // At once, before any file is read or written: until the next daemon listens, nobody else
      // takes its ports (another project's daemon probing upward, a process posing as lazy's
      // proxy). Each connection is closed, so an agent's request fails fast and its retry finds
      // the new daemon. A process quicker still is refused by the new daemon (proxy listenFor).
      // A daemon that died before asking for them leaves them held: those are the ones to keep.
      if (!held.length) held = hold(p, log);
      const exit = child.signalCode ? `signal ${child.signalCode}` : `exit code ${code}`;
      let record: State.DaemonRecord | undefined;
      try {
        record = State.readRecord(p);
      } catch {}
      // It never became ready: a refusal at start (a broken or untrusted lazy.toml) would only
      // refuse again. Its reason is in startup-error.json for the CLI that is waiting on it.
      if (record?.pid !== pid && existsSync(p.startupError)) {
        log.error(`the daemon refused to start (${exit}); not restarting it`);
        return typeof code === "number" && code > 0 ? code : 1;
      }
      // Its record stays: the next daemon listens on the ports it names (ports.ts).
      // The project or its state went away (a test's temp folder, an uninstall): nothing to keep.
      if (!existsSync(root) || !existsSync(p.dir)) return 0;
      const now = Date.now();
      recent.push({ at: new Date(now).toISOString(), exit });
      while (recent.length && now - Date.parse(recent[0]!.at) > WINDOW_MS) recent.shift();
      const crashes: Crashes = { recent: [...recent] };
      if (recent.length >= MAX_CRASHES) {
        const reason = `the daemon crashed ${recent.length} times in ${Math.round((now - Date.parse(recent[0]!.at)) / 1000)} s; last exit: ${exit}; lazy stopped restarting it`;
        crashes.gaveUp = { at: new Date(now).toISOString(), reason };
        writeFileAtomic(p.crashes, JSON.stringify(crashes, null, 2));
        log.error(`${reason}. Any lazy command starts it again; see the lines above for why it died.`);
        return 1;
      }
      writeFileAtomic(p.crashes, JSON.stringify(crashes, null, 2));
      const wait = BACKOFF_MS[Math.min(recent.length - 1, BACKOFF_MS.length - 1)]!;
      log.warn(
        `the daemon (pid ${pid}) died (${exit}); starting it again${wait ? ` in ${wait} ms` : ""} (crash ${recent.length} of ${MAX_CRASHES} allowed in ${WINDOW_MS / 1000} s)`,
      );
      if (wait) await Bun.sleep(wait);
      if (stopping) return 0;
    }
  } finally {
    release();
    try {
      const k = readKeeper(p);
      if (k?.pid === process.pid) rmSync(p.keeper, { force: true });
    } catch {}
    lock.release();
  }
}

/**
 * The dead daemon's ports (its record; the model proxy's and the egress proxy's gateway ports
 * containers were given), bound by the keeper.
 */
function hold(p: State.StatePaths, log: Log.Logger): { stop(): void }[] {
  const want: { host: string; port: number }[] = [];
  try {
    const r = State.readRecord(p);
    if (r) want.push(r.api, ...(r.proxy ? [r.proxy] : []));
  } catch {}
  // The model proxy's and the egress proxy's: containers were started with both in their env.
  for (const file of [p.gatewayPorts, p.egressPorts])
    try {
      const g = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
      for (const [host, port] of Object.entries(g)) if (typeof port === "number") want.push({ host, port });
    } catch {}
  const out: { stop(): void }[] = [];
  for (const a of want)
    try {
      const l = Bun.listen({ hostname: a.host, port: a.port, socket: { open: (s) => void s.end(HELD), data() {} } });
      out.push({ stop: () => l.stop(true) });
    } catch (e) {
      // Gone with its network, or someone took it in the instant after the crash: the new
      // daemon finds out and says so (proxy/index.ts listenFor).
      log.debug(`could not hold ${a.host}:${a.port} for the next daemon: ${(e as Error).message}`);
    }
  return out;
}

/**
 * What a held port answers, whatever was asked: a 503 that says no daemon took the request, so
 * the CLI sends a write again to the next daemon (cli/client.ts) and a harness retries.
 */
export const HELD =
  "HTTP/1.1 503 Service Unavailable\r\nx-lazy-keeper: 1\r\ncontent-type: text/plain\r\ncontent-length: 58\r\nconnection: close\r\n\r\nlazy's daemon is coming back; nothing was done. Try again.";

/**
 * In the daemon (the keeper's child), just before it listens: the keeper lets go of the ports
 * it held for it. No keeper (LAZY_KEEPER=0, a service manager): nothing to ask.
 */
export async function handover(): Promise<void> {
  if (process.env.LAZY_KEPT !== "1") return;
  // Not for whatever lazy this daemon runs in turn: none of those is the keeper's child.
  delete process.env.LAZY_KEPT;
  if (!process.send) return;
  const released = new Promise<void>((resolve) => {
    const on = (m: unknown) => {
      if ((m as { op?: string })?.op !== "released") return;
      process.off("message", on);
      resolve();
    };
    process.on("message", on);
  });
  process.send({ op: "release" });
  await Promise.race([released, Bun.sleep(2000)]);
}
