/**
 * The daemon's per-project state folder, `~/.lazy/daemon/<slug>/` (0700): the auth token
 * (0600), the single-instance lock, the pid, the log, the record the CLI finds the daemon by
 * (daemon.json), and the task store. Nothing here lives under the project root.
 */

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, readOwn, writeFileAtomic } from "../util/files";
import { flockHolder } from "../util/lock-holder";
import { GATEWAY_PORTS_FILE, projectSlug, stateDir } from "../util/paths";
import { isOurs } from "../util/process";

/** The record a ready daemon leaves for the CLI (daemon.json). No zod here: every command reads it, and start-up time counts. */
export interface DaemonRecord {
  pid: number;
  version: string;
  root: string;
  startedAt: string;
  /** Where the daemon's API listens; the CLI connects here. */
  api: { host: string; port: number };
  web: boolean;
  proxy: { host: string; port: number } | null;
  /** The Docker engine its containers run on (absent from a daemon older than this): the CLI's preflight compares it with the shell's. */
  docker?: { host: string; source: string };
}

function isRecord(v: unknown): v is DaemonRecord {
  const r = v as DaemonRecord;
  return (
    !!r && typeof r.pid === "number" && typeof r.version === "string" && typeof r.api?.host === "string" && typeof r.api?.port === "number"
  );
}

export interface StatePaths {
  dir: string;
  slug: string;
  token: string;
  lock: string;
  pid: string;
  log: string;
  /** daemon.json: the DaemonRecord. */
  record: string;
  startupError: string;
  store: string;
  /** keeper.json: the pid of the process that respawns a crashed daemon (keeper.ts). */
  keeper: string;
  /** The keeper's own single-instance lock. */
  keeperLock: string;
  /** crashes.json: the daemon's recent crashes, and whether the keeper gave up (keeper.ts). */
  crashes: string;
  /** egress-ports.json: the egress proxy's port on each gateway, kept across a crash (egress/index.ts). */
  egressPorts: string;
  /** gateway-ports.json: the model proxy's port on each gateway, kept across a crash (proxy/main/ports.ts). */
  gatewayPorts: string;
  /** ports.json: the API's and proxy's ports the project last used, kept across stops (ports.ts). */
  ports: string;
}

export function paths(root: string): StatePaths {
  const dir = stateDir(root);
  return {
    dir,
    slug: projectSlug(root),
    token: join(dir, "token"),
    lock: join(dir, "lock"),
    pid: join(dir, "pid"),
    log: join(dir, "daemon.log"),
    record: join(dir, "daemon.json"),
    startupError: join(dir, "startup-error.json"),
    store: join(dir, "store.db"),
    keeper: join(dir, "keeper.json"),
    keeperLock: join(dir, "keeper.lock"),
    crashes: join(dir, "crashes.json"),
    egressPorts: join(dir, "egress-ports.json"),
    gatewayPorts: join(dir, GATEWAY_PORTS_FILE),
    ports: join(dir, "ports.json"),
  };
}

/** The daemon's auth token: made once, 0600, reused across restarts. */
export function ensureToken(p: StatePaths): string {
  ensurePrivateDir(p.dir);
  if (existsSync(p.token)) {
    const t = readFileSync(p.token, "utf8").trim();
    if (t.length >= 32) return t;
  }
  const t = randomBytes(32).toString("hex");
  writeFileAtomic(p.token, t + "\n");
  return t;
}

export function readToken(p: StatePaths): string | undefined {
  try {
    return readFileSync(p.token, "utf8").trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The daemon's record, if there is one. The CLI sends the token where it says, signals the pid
 * it names and restarts a daemon whose version differs: a record another user could have
 * written (not ours, or writable by group or others) is refused, never used.
 */
export function readRecord(p: StatePaths): DaemonRecord | undefined {
  const read = readOwn(p.record);
  if (!read) return undefined;
  if ("foreign" in read)
    throw new LazyError(
      "daemon_failed",
      `${p.record} (how lazy finds the project's daemon) is ${read.foreign}, so lazy does not trust it: another user may have written it. Remove it (rm ${p.record}), then run the command again.`,
    );
  const text = read.text;
  try {
    const r: unknown = JSON.parse(text);
    return isRecord(r) ? r : undefined;
  } catch {
    return undefined;
  }
}

export function writeRecord(p: StatePaths, r: DaemonRecord): void {
  writeFileAtomic(p.record, JSON.stringify(r, null, 2));
  writeFileAtomic(p.pid, `${r.pid}\n`);
}

export function clearRecord(p: StatePaths, pid: number): void {
  let r: DaemonRecord | undefined;
  try {
    r = readRecord(p);
  } catch {
    // Not a record this user wrote: not ours to remove either.
    return;
  }
  if (r && r.pid !== pid) return;
  rmSync(p.record, { force: true });
  rmSync(p.pid, { force: true });
}

export { isAlive } from "../util/process";

/**
 * Whether `pid` (as daemon.json names it) is the project's daemon now: a live process of this
 * user that holds the daemon's single-instance lock. A daemon that died leaves its record
 * behind; its pid may since be another process's — this user's shell, or another user's that
 * took the daemon's port to collect what the CLI sends there. Where the lock's holder cannot be
 * read (not Linux), a live process of this user.
 */
export function isDaemon(p: StatePaths, pid: number): boolean {
  if (!isOurs(pid)) return false;
  const holder = flockHolder(p.lock);
  return holder === undefined || holder === pid;
}
