/**
 * `DOCKER_HOST=ssh://[user@]host[:port]` through the system's OpenSSH client, never dockerode's
 * ssh transport (it accepts any host key it is shown). One `ssh -N -L <socket>:/var/run/docker.sock`
 * per destination per process, held by this process: its local end is a unix socket in a fresh
 * 0700 folder that dockerode talks to. Host keys are checked strictly (a key not in known_hosts,
 * or one that changed, is refused, never added), BatchMode asks nothing. The tunnel is ended
 * when the process exits (on Linux also when it is killed: setpriv's parent-death signal) and
 * started again when it dies; the folder of one killed with its process is swept by the next.
 * Each way it can fail is worded once here, with its remedy.
 */
import { existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { LazyError } from "../util/errors";
import * as Log from "../util/log";

const log = Log.create("ssh");

/** Where the engine's socket is on the remote host (as the docker CLI's ssh helper assumes). */
export const REMOTE_SOCKET = "/var/run/docker.sock";
/** How long a first connection may take before it is given up (ssh's own ConnectTimeout is shorter). */
const CONNECT_MS = 30_000;
/** After this long without an answer the process says it is still connecting. */
const SLOW_MS = 3_000;
/** ssh's stderr kept for the diagnosis (the tail). */
const STDERR_KEEP = 8 * 1024;

export interface Destination {
  user?: string;
  host: string;
  port?: number;
  /** ssh://[user@]host[:port], as parsed (for messages and as the tunnel's key). */
  address: string;
}

const USER = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/;
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])$/;

/** An address safe to print: printable ASCII only, bounded. */
function shown(s: string): string {
  return /^[\x20-\x7e]{0,200}$/.test(s) ? s : `${JSON.stringify(s.slice(0, 60)).replace(/[^\x20-\x7e]/g, "?")}…`;
}

/**
 * An ssh:// address checked before any of it reaches ssh's argv: a user or host starting with
 * `-` would be read as an option (`ssh://-oProxyCommand=…` runs a command), a space or a path
 * as something else. Docker's own rules: no path, no query; port 1-65535.
 */
export function parse(address: string, from: string): Destination {
  const refuse = (why: string) =>
    new LazyError(
      "launch_refused",
      `${shown(address)} (${from}) is not an ssh:// address lazy hands to ssh: ${why}. Write ssh://[user@]host[:port] (user and host: letters, digits, '.', '_', '-', not starting with '-'), or name a Host alias of ~/.ssh/config. No task was touched.`,
    );
  if (!address.startsWith("ssh://")) throw refuse("it does not start with ssh://");
  const rest = address.slice("ssh://".length).replace(/\/$/, "");
  const m = /^(?:([^@]*)@)?(\[[^\]]*\]|[^:]*)(?::([^:]*))?$/.exec(rest);
  if (!m) throw refuse("it has more than a user, a host and a port");
  const [, user, host = "", port] = m;
  if (user !== undefined && !USER.test(user)) throw refuse(`the user ${shown(JSON.stringify(user))} is not a plain user name`);
  if (!HOST.test(host)) throw refuse(`the host ${shown(JSON.stringify(host))} is not a host name or address`);
  let p: number | undefined;
  if (port !== undefined) {
    p = /^[0-9]{1,5}$/.test(port) ? Number(port) : 0;
    if (p < 1 || p > 65535) throw refuse(`the port ${shown(JSON.stringify(port))} is not 1-65535`);
  }
  return { user, host, port: p, address: `ssh://${user ? `${user}@` : ""}${host}${p ? `:${p}` : ""}` };
}

/** ssh's argv for a tunnel to `d` whose local end is `socket`. Options first, then `--`, then the host. */
export function argv(d: Destination, socket: string, ssh = "ssh"): string[] {
  const host = d.host.startsWith("[") ? d.host.slice(1, -1) : d.host;
  // biome-ignore format: each option beside its value
  return [
    ssh,
    "-N",
    "-T",
    "-o", "BatchMode=yes",
    "-o", "StrictHostKeyChecking=yes",
    "-o", "ExitOnForwardFailure=yes",
    "-o", "ServerAliveInterval=15",
    "-o", "ServerAliveCountMax=3",
    "-o", "ConnectTimeout=10",
    // A multiplexing master of the user's config would outlive this process (ControlPersist).
    "-o", "ControlMaster=no",
    "-o", "ControlPath=none",
    "-o", "StreamLocalBindUnlink=yes",
    "-o", "PermitLocalCommand=no",
    "-L", `${socket}:${REMOTE_SOCKET}`,
    ...(d.port ? ["-p", String(d.port)] : []),
    ...(d.user ? ["-l", d.user] : []),
    "--",
    host,
  ];
}

/** The host as ssh and ssh-keygen name it (no brackets), and the ssh command a person would type. */
const bare = (d: Destination) => d.host.replace(/^\[|\]$/g, "");
const command = (d: Destination) => `ssh ${d.port ? `-p ${d.port} ` : ""}${d.user ? `${d.user}@` : ""}${bare(d)}`;

/** What ssh's stderr says went wrong, as lazy's sentence with the remedy; undefined if it says nothing known. */
export function diagnose(d: Destination, stderr: string): string | undefined {
  const port = d.port ?? 22;
  const where = `${bare(d)} port ${port}`;
  const keyscan = `ssh-keyscan -p ${port} ${bare(d)}`;
  const line = (re: RegExp, or: string) =>
    shown(
      stderr
        .split("\n")
        .find((l) => re.test(l))
        ?.trim()
        .slice(0, 200) ?? or,
    );
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/.test(stderr))
    return `The SSH host key of ${d.address} (${where}) is not the one in known_hosts: lazy never accepts a changed key (it may be a machine in the middle). If the server's key was really replaced, check its new fingerprint with its administrator (${keyscan} | ssh-keygen -lf -), remove the old entry (ssh-keygen -R ${d.port ? `"[${bare(d)}]:${port}"` : bare(d)}) and connect once with ${command(d)} to add the new one.`;
  if (/No [A-Z0-9-]+ host key is known for|Host key verification failed/.test(stderr))
    return `The SSH host key of ${d.address} (${where}) is not known (not in known_hosts), and lazy never accepts an unknown key: check the server's fingerprint (${keyscan} | ssh-keygen -lf -, compared with what its administrator says), then add it by connecting once with ${command(d)} (or append the checked ${keyscan} lines to ~/.ssh/known_hosts).`;
  if (/Permission denied|Too many authentication failures|Unable to negotiate/.test(stderr))
    return `${d.address} refused lazy's SSH login (${line(/Permission denied|Too many|Unable to negotiate/, "permission denied")}): lazy runs ssh with BatchMode, so the login must work without a prompt: load the key into ssh-agent or name it as IdentityFile in ~/.ssh/config, and check that ${command(d)} docker version works.`;
  if (
    /Could not resolve hostname|Connection refused|timed out|No route to host|Network is unreachable|Connection closed by|Connection reset/.test(
      stderr,
    )
  )
    return `${d.address} does not answer over SSH (${line(/resolve|refused|timed out|No route|unreachable|closed|reset/, "no answer")}): start its sshd or fix the address, or unset DOCKER_HOST to use this machine's engine.`;
  if (/open failed|administratively prohibited/i.test(stderr)) return socketMissing(d);
  return undefined;
}

export const socketMissing = (d: Destination) =>
  `${d.address} accepted lazy's SSH login but ${REMOTE_SOCKET} there could not be opened through it: either no Docker engine runs there (start it; the login's user must be allowed to use its socket), or its sshd refuses unix-socket forwarding (set AllowStreamLocalForwarding yes and AllowTcpForwarding yes or local in its sshd_config). Or unset DOCKER_HOST to use this machine's engine.`;

const noClient = (d: Destination, why: string) =>
  new LazyError(
    "launch_refused",
    `${d.address} needs the OpenSSH client (ssh) on PATH, and it could not be started (${shown(why.slice(0, 200))}): install it (Debian/Ubuntu: apt install openssh-client), or unset DOCKER_HOST. No task was touched.`,
  );

/**
 * The socket folders of processes that are gone (killed: no exit handler ran), this user's
 * only. A folder is named after its process, `lazy-ssh-<pid>-…`.
 */
function sweep() {
  const uid = process.getuid?.();
  try {
    for (const name of readdirSync(tmpdir())) {
      const pid = Number(/^lazy-ssh-(\d+)-/.exec(name)?.[1]);
      if (!pid || pid === process.pid) continue;
      const dir = join(tmpdir(), name);
      const st = lstatSync(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      try {
        process.kill(pid, 0);
        continue; // alive
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ESRCH") continue;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  } catch {}
}

/** One held tunnel. */
class Tunnel {
  readonly dir = mkdtempSync(join(tmpdir(), `lazy-ssh-${process.pid}-`));
  readonly socket = join(this.dir, "docker.sock");
  private proc: Subprocess<"ignore", "ignore", "pipe"> | undefined;
  private stderr = "";
  private starting: Promise<string> | undefined;
  private closed = false;
  private restarts = 0;
  /** It answered once: only then is a tunnel that dies started again by itself. */
  private ready = false;
  private bornAt = 0;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(readonly d: Destination) {}

  /** The local socket once the tunnel answers; starts (or restarts) ssh when it is not running. */
  ensure(): Promise<string> {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null && !this.starting) return Promise.resolve(this.socket);
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  private async start(): Promise<string> {
    if (this.closed) throw new LazyError("launch_refused", `The SSH tunnel to ${this.d.address} was closed.`);
    rmSync(this.socket, { force: true });
    const args = argv(this.d, this.socket);
    // Linux: the tunnel dies with this process even when it is killed (kill -9, the OOM killer).
    const cmd =
      process.platform === "linux" && existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "KILL", ...args] : args;
    let proc: Subprocess<"ignore", "ignore", "pipe">;
    try {
      proc = Bun.spawn(cmd, { stdin: "ignore", stdout: "ignore", stderr: "pipe", env: { ...process.env } }); // today's env: Bun.spawn alone passes the one the process started with
    } catch (e) {
      throw noClient(this.d, (e as Error).message);
    }
    this.proc = proc;
    this.stderr = "";
    this.bornAt = Date.now();
    void this.readStderr(proc);
    void proc.exited.then(() => this.died(proc));

    const began = Date.now();
    let said = false;
    while (!existsSync(this.socket)) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        await Bun.sleep(50); // the last of stderr
        this.proc = undefined;
        throw this.failure(`ssh exited with ${proc.exitCode ?? proc.signalCode}`);
      }
      if (!said && Date.now() - began > SLOW_MS) {
        said = true;
        log.warn(`still connecting to ${this.d.address} through ssh (pid ${proc.pid}) after ${SLOW_MS / 1000} s…`);
      }
      if (Date.now() - began > CONNECT_MS) {
        this.proc = undefined;
        proc.kill("SIGKILL");
        throw this.failure(`no tunnel within ${CONNECT_MS / 1000} s`);
      }
      await Bun.sleep(50);
    }
    // Logged in and forwarding: now through to the engine's socket there.
    const answer = await fetch("http://docker/_ping", { unix: this.socket, signal: AbortSignal.timeout(10_000) } as RequestInit)
      .then((r) => r.ok)
      .catch(() => false);
    if (!answer) {
      await Bun.sleep(100);
      const why = diagnose(this.d, this.stderr);
      this.proc = undefined;
      proc.kill("SIGKILL");
      throw new LazyError("launch_refused", `${why ?? socketMissing(this.d)} No task was touched.`);
    }
    this.ready = true;
    if (said) log.info(`connected to ${this.d.address} after ${((Date.now() - began) / 1000).toFixed(1)} s`);
    return this.socket;
  }

  private failure(what: string): LazyError {
    // setpriv could not find ssh on PATH.
    if (/failed to execute ssh/.test(this.stderr)) return noClient(this.d, "not found on PATH");
    const why = diagnose(this.d, this.stderr);
    const tail = this.stderr.trim().split("\n").slice(-3).join(" / ");
    return new LazyError(
      "launch_refused",
      `${why ?? `ssh to ${this.d.address} failed (${what}${tail ? `: ${shown(tail.slice(0, 300))}` : ""}): check that ${command(this.d)} works from this shell without a prompt, or unset DOCKER_HOST.`} No task was touched.`,
    );
  }

  private async readStderr(proc: Subprocess<"ignore", "ignore", "pipe">) {
    const dec = new TextDecoder();
    try {
      for await (const chunk of proc.stderr) {
        if (proc !== this.proc) continue;
        this.stderr = (this.stderr + dec.decode(chunk, { stream: true })).slice(-STDERR_KEEP);
      }
    } catch {}
  }

  /** ssh ended: unless lazy closed it, start it again (backing off while it keeps dying). */
  private died(proc: Subprocess) {
    if (proc !== this.proc || this.closed || !this.ready) return;
    if (Date.now() - this.bornAt > 60_000) this.restarts = 0;
    const why = this.stderr.trim().split("\n").at(-1) ?? "";
    this.restartLater(`ended (${proc.exitCode ?? proc.signalCode}${why ? `: ${shown(why.slice(0, 200))}` : ""})`);
  }

  /** A tunnel that answered once is kept: after it dies, or a restart fails, it is tried again, backing off to 30 s. */
  private restartLater(why: string) {
    const wait = Math.min(30_000, 1000 * 2 ** this.restarts++);
    log.warn(`the ssh tunnel to ${this.d.address} ${why}; starting it again in ${wait / 1000} s`);
    this.restartTimer = setTimeout(() => {
      if (this.closed || this.starting || (this.proc && this.proc.exitCode === null && this.proc.signalCode === null)) return;
      this.ensure().catch((e) => this.restartLater(`could not be started again: ${(e as Error).message}`));
    }, wait);
    this.restartTimer.unref?.();
  }

  /** End ssh and remove the socket's folder (synchronous: it runs in process.on("exit")). */
  close() {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    try {
      this.proc?.kill("SIGTERM");
    } catch {}
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const tunnels = new Map<string, Tunnel>();
let hooked = false;

/** The local socket of this process's tunnel to `address` (started, or restarted, as needed). */
export function socketFor(address: string, from: string): Promise<string> {
  const d = parse(address, from);
  let t = tunnels.get(d.address);
  if (!t) {
    sweep();
    t = new Tunnel(d);
    tunnels.set(d.address, t);
    if (!hooked) {
      hooked = true;
      process.on("exit", closeAll);
    }
  }
  return t.ensure();
}

/** The pid of this process's ssh for `address`, if one runs (status, tests). */
export function pidOf(address: string): number | undefined {
  try {
    return tunnels.get(parse(address, "").address)?.pid;
  } catch {
    return undefined;
  }
}

/** End every tunnel of this process. */
export function closeAll() {
  for (const t of tunnels.values()) t.close();
  tunnels.clear();
}
