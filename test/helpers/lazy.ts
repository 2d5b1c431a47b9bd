/**
 * Drive the compiled binary (dist/lazy) the way a user does: a temp project, a temp LAZY_HOME,
 * real processes. Every project made here has its daemon stopped by cleanup().
 */
import { Database } from "bun:sqlite";
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Fence, LinkLocal } from "../../src/network";

export const BIN = resolve(import.meta.dir, "../../dist/lazy");

if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run bun run build first (bash scripts/test.sh does).`);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export class Project {
  readonly root: string;
  readonly home: string;
  env: Record<string, string>;

  /**
   * `root`: an existing folder to use as the checkout, its modes as they are (CI's `mktemp -d`).
   * `home`: an existing empty folder to be LAZY_HOME (one on a small filesystem of the test's own).
   */
  constructor(opts: { toml?: string; env?: Record<string, string>; root?: string; home?: string; commit?: boolean } = {}) {
    this.root = opts.root ? realpathSync(opts.root) : realpathSync(mkdtempSync(join(tmpdir(), "lazy-proj-")));
    // Like a real checkout (mkdtemp makes 0700): an agent in a container runs as another uid.
    if (!opts.root) chmodSync(this.root, 0o755);
    this.home = opts.home ? realpathSync(opts.home) : realpathSync(mkdtempSync(join(tmpdir(), "lazy-home-")));
    Bun.spawnSync(["git", "init", "-q", "-b", "main", this.root]);
    // A valid project has a commit (lazy's preflight refuses a launch without one): an empty one
    // by Dev, which containerProject's first commit replaces (amends). `commit: false` leaves none.
    if (opts.commit !== false && !opts.root)
      Bun.spawnSync(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
        cwd: this.root,
      });
    // The file store unless a test asks for another: a developer's own keychain stays out of it.
    this.env = { LAZY_HOME: this.home, LAZY_CREDENTIAL_BACKEND: "file", ...opts.env };
    if (opts.toml !== undefined) this.writeToml(opts.toml);
    projects.push(this);
  }

  /**
   * `lazy trust` in the project, as its person would after writing lazy.toml: the test's own
   * config is trusted the way the CLI records it. A file that does not load stays untrusted
   * (the test is about that file).
   */
  trust(): Result {
    const r = Bun.spawnSync([BIN, "trust", "--yes"], { cwd: this.root, env: this.fullEnv(), stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode ?? 1, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
  }

  fullEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, ...this.env, ...extra })) if (v !== undefined) env[k] = v;
    delete env.LAZY_PROJECT;
    return env;
  }

  /** Run `lazy ARGS` in the project folder and wait for it. */
  async run(args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string; cwd?: string } = {}): Promise<Result> {
    const p = Bun.spawn([BIN, ...args], {
      cwd: opts.cwd ?? this.root,
      env: this.fullEnv(opts.env),
      stdin: opts.stdin === undefined ? "ignore" : new Blob([opts.stdin]),
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, stdout, stderr };
  }

  /**
   * Run `lazy ARGS` on a real pseudo-terminal (util-linux `script`): what a person at a
   * terminal sees, both streams together. FORCE_COLOR/NO_COLOR come only from `env`.
   */
  async onTerminal(args: string[], env: Record<string, string> = {}): Promise<string> {
    const cmd = [BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
    const full: Record<string, string> = { ...this.fullEnv(), TERM: "xterm", COLUMNS: "200" };
    delete full.FORCE_COLOR;
    delete full.NO_COLOR;
    Object.assign(full, env);
    const proc = Bun.spawn(["script", "-qec", cmd, "/dev/null"], {
      cwd: this.root,
      env: full,
      stdout: "pipe",
      stderr: "pipe",
      stdin: "ignore",
    });
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    return out;
  }

  /** Like run, but fails the test with the output when the command fails. */
  async ok(args: string[], opts: Parameters<Project["run"]>[1] = {}): Promise<Result> {
    const r = await this.run(args, opts);
    if (r.code !== 0) {
      const errors = this.log()
        .split("\n")
        .filter((l) => / ERROR /.test(l))
        .slice(-5)
        .join("\n");
      throw new Error(
        `lazy ${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}${errors ? `\ndaemon log errors:\n${errors}` : ""}`,
      );
    }
    return r;
  }

  async json<T = any>(args: string[]): Promise<T> {
    const r = await this.ok([...args, "--json"]);
    return JSON.parse(r.stdout) as T;
  }

  get stateDir(): string {
    const base = join(this.home, "daemon");
    const slug = (Bun.spawnSync(["ls", base]).stdout.toString().trim().split("\n")[0] ?? "").trim();
    return join(base, slug);
  }

  runtime(): { pid: number; api: { host: string; port: number } } | undefined {
    const f = join(this.stateDir, "daemon.json");
    return existsSync(f) ? JSON.parse(readFileSync(f, "utf8")) : undefined;
  }

  /** The proxy's loopback address from the daemon's runtime record. */
  runtimeProxyUrl(): string {
    const rt = JSON.parse(readFileSync(join(this.stateDir, "daemon.json"), "utf8"));
    return `http://127.0.0.1:${rt.proxy.port}`;
  }

  token(): string {
    return readFileSync(join(this.stateDir, "token"), "utf8").trim();
  }

  /** Call the daemon's API with its token, as the CLI does. */
  async api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
    const rt = this.runtime();
    if (!rt) throw new Error("the daemon is not running");
    const res = await fetch(`http://127.0.0.1:${rt.api.port}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token()}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
    return json as T;
  }

  /** Store a credential through `lazy auth set`, the value on stdin. */
  async setCredential(name: string, value: string): Promise<Result> {
    return this.ok(["auth", "set", name], { stdin: value });
  }

  /**
   * A placeholder grant and the proxy's address, as a launch gets them. A task's placeholder
   * redeems only while one of its turns runs, a host one while its process lives: a grant asked
   * for here is held by this test's process (pid), unless `pid: null` leaves it out.
   */
  async grant(body: {
    role: "agent" | "host" | "lazy";
    profile?: string;
    task?: string;
    pid?: number | null;
  }): Promise<{ envVar: string; placeholder: string; proxyUrl: string; credential: string | null }> {
    const { pid, ...rest } = body;
    const held = pid === null || body.role === "lazy" ? {} : { pid: pid ?? process.pid };
    return this.api("POST", "/api/proxy/grants", { ...rest, ...held });
  }

  /** Every file under the state folder and LAZY_HOME, with its bytes, for secret scans. */
  allStateFiles(): { path: string; bytes: Buffer }[] {
    const out: { path: string; bytes: Buffer }[] = [];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const f = join(dir, e.name);
        if (e.isDirectory()) walk(f);
        else if (e.isFile()) out.push({ path: f, bytes: readFileSync(f) });
      }
    };
    walk(this.home);
    return out;
  }

  log(): string {
    const f = join(this.stateDir, "daemon.log");
    return existsSync(f) ? readFileSync(f, "utf8") : "";
  }

  /** Write lazy.toml as the project's person: trusted, like an edit followed by lazy trust. */
  writeToml(text: string): void {
    writeFileSync(join(this.root, "lazy.toml"), text);
    this.trust();
  }

  async cleanup(): Promise<void> {
    const rt = this.runtime();
    // Containers and the project's network, if the test made any (Docker's address pools are small).
    const slug = existsSync(join(this.home, "daemon")) ? readdirSync(join(this.home, "daemon"))[0] : undefined;
    if (slug && Bun.which("docker")) {
      const ids = Bun.spawnSync(["docker", "ps", "-aq", "--filter", `label=dev.lazy.project=${slug}`])
        .stdout.toString()
        .split("\n")
        .filter(Boolean);
      if (ids.length) Bun.spawnSync(["docker", "rm", "-f", ...ids], { stdout: "ignore", stderr: "ignore" });
      const net = Bun.spawnSync(["docker", "network", "inspect", `lazy-${slug}`]);
      Bun.spawnSync(["docker", "network", "rm", `lazy-${slug}`], { stdout: "ignore", stderr: "ignore" });
      // lazy's firewall jump for that bridge (the daemon drops it only when it removes the network itself).
      if (net.exitCode === 0 && process.getuid?.() === 0) {
        const n = (JSON.parse(net.stdout.toString()) as { Id: string; Options?: Record<string, string> }[])[0];
        if (n)
          Bun.spawnSync(["sh", "-c", LinkLocal.removeScript(LinkLocal.bridgeOf(n), Fence.removeLines())], {
            stdout: "ignore",
            stderr: "ignore",
          });
      }
    }
    await this.run(["daemon", "stop"]).catch(() => {});
    // Every daemon under this LAZY_HOME (a test may have started one for a subfolder too), and
    // first their keepers (which would start a killed daemon again).
    const recorded = (file: string) =>
      existsSync(join(this.home, "daemon"))
        ? readdirSync(join(this.home, "daemon")).flatMap((s) => {
            const f = join(this.home, "daemon", s, file);
            try {
              return [(JSON.parse(readFileSync(f, "utf8")) as { pid: number }).pid];
            } catch {
              return [];
            }
          })
        : [];
    const pids = recorded("daemon.json");
    const ours = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`LAZY_HOME=${this.home}`);
      } catch {
        return false;
      }
    };
    for (const pid of recorded("keeper.json").filter(ours)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    for (const pid of new Set([...(rt ? [rt.pid] : []), ...pids.filter(ours)])) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    rmSync(this.root, { recursive: true, force: true });
    rmSync(this.home, { recursive: true, force: true });
  }
}

const projects: Project[] = [];

/** Clean up every project made here, then close the mock providers given (one not made yet is passed over). */
export async function cleanupAll(...mocks: ({ close(): Promise<void> } | undefined)[]): Promise<void> {
  await Promise.all(projects.splice(0).map((p) => p.cleanup()));
  for (const m of mocks) await m?.close();
}

/** Poll until fn returns a truthy value or the time runs out (bounded, never hangs a suite). */
export async function until<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = "condition"): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await Bun.sleep(25);
  }
}

/**
 * That something does not happen: fails as soon as fn returns a truthy value, passes when `ms`
 * went by without it. For a negative with no later event to wait on; where one exists (the
 * request's audit row, the command's exit), wait for it with `until` and then look.
 */
export async function never(fn: () => unknown | Promise<unknown>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) throw new Error(`${what} happened (watched for ${ms} ms): ${typeof v === "string" ? v : JSON.stringify(v)}`);
    if (Date.now() > deadline) return;
    await Bun.sleep(25);
  }
}

/**
 * The usage-limit readings `p`'s daemon has kept in its store (text, for a search): the proxy
 * keeps them off the request path, a moment after the answer; a kill -9 leaves what is here.
 */
export function storedReadings(p: Project): string {
  const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
  try {
    return JSON.stringify(db.query("SELECT headers FROM readings").all());
  } finally {
    db.close();
  }
}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

/** Run a shell command in `cwd` (git in a test's project, docker): its exit code and output. */
export const sh = (cwd: string, cmd: string) => {
  const r = Bun.spawnSync(["bash", "-c", cmd], { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

/**
 * A bridge interface of this host at `address` (a.b.c.d/len), as Docker leaves one whose
 * containers are gone: up, its one port a veth without a peer, so no carrier ("linkdown" in ip
 * route; os.networkInterfaces() skips it). `carrier: true`: a plain bridge set up (it counts as
 * up). Needs root. `remove()` deletes it and its port; safe to call twice.
 */
export function hostBridge(name: string, address: string, { carrier = false } = {}): { remove(): void } {
  const port = carrier
    ? ""
    : ` && ip link add ${name}v type veth peer name ${name}p && ip link set ${name}v master ${name} && ip link set ${name}v up`;
  const made = sh("/", `ip link add ${name} type bridge && ip addr add ${address} dev ${name}${port} && ip link set ${name} up`);
  const remove = () => void sh("/", `ip link del ${name}v 2>/dev/null; ip link del ${name} 2>/dev/null`);
  if (made.code !== 0) {
    remove();
    throw new Error(`could not make bridge ${name} at ${address} (root is needed): ${made.err}`);
  }
  return { remove };
}
