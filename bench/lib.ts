/** Small helpers for the bench scripts: wall-clock of whole processes, percentiles, a project with its daemon. */
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Fence, LinkLocal } from "../src/network";

export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export function timeProcess(cmd: string[], env?: Record<string, string>, cwd?: string): number {
  const t = performance.now();
  const r = Bun.spawnSync(cmd, { env: env ?? (process.env as Record<string, string>), cwd, stdout: "ignore", stderr: "pipe" });
  const ms = performance.now() - t;
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr.toString()}`);
  return ms;
}

export const fmt = (ms: number) => `${ms.toFixed(1)} ms`;

/**
 * `lazy trust` in a bench's project, as its person would after writing lazy.toml (a lazy.toml
 * with upstreams is refused until then). A build from before trust has no such command: ignored.
 */
export function trustToml(bin: string, root: string, env: Record<string, string>): void {
  Bun.spawnSync([bin, "trust", "--yes"], { cwd: root, env, stdout: "ignore", stderr: "ignore" });
}

/**
 * A project of its own (temp root and LAZY_HOME, a git repo, `lazy.toml` pointing Anthropic at
 * `upstream`), its daemon started by storing a key, and the daemon API's address and token:
 * what the proxy benches set up for each build they drive. `stop` ends the daemon and removes
 * both folders.
 */
export async function proxyProject(bin: string, upstream: string, toml = "", label = "proxy", setup?: (home: string) => void) {
  const root = mkdtempSync(join(tmpdir(), `lazy-bench-${label}-`));
  chmodSync(root, 0o755);
  const home = mkdtempSync(join(tmpdir(), `lazy-bench-${label}-home-`));
  // LAZY_PREFLIGHT=off: a proxy bench's task is only a grant, and the launch preflight (issue 37)
  // would refuse its add for a repository with no commit and an image never built.
  const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file", LAZY_PREFLIGHT: "off" };
  Bun.spawnSync(["git", "init", "-q", root]);
  writeFileSync(join(root, "lazy.toml"), `[proxy.upstreams]\nanthropic = "${upstream}"\n${toml}`);
  setup?.(home); // before the daemon starts: files it reads at start (request plugins)
  trustToml(bin, root, env);
  const lazy = (args: string[], stdin?: string) => {
    const r = Bun.spawnSync([bin, ...args], { cwd: root, env, stdin: stdin === undefined ? "ignore" : new Blob([stdin]) });
    if (r.exitCode !== 0) throw new Error(`${bin} ${args.join(" ")}: ${r.stderr}`);
    return r.stdout.toString();
  };
  const stop = () => {
    Bun.spawnSync([bin, "daemon", "stop"], { cwd: root, env });
    for (const d of [root, home]) rmSync(d, { recursive: true, force: true });
  };
  try {
    lazy(["auth", "set", "anthropic"], BENCH_KEY);
    const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
    const token = readFileSync(join(state, "token"), "utf8").trim();
    const rt = JSON.parse(readFileSync(join(state, "daemon.json"), "utf8")) as { pid: number; api: { port: number } };
    const api = `http://127.0.0.1:${rt.api.port}`;
    /** A placeholder grant, as a launch gets one (an agent grant needs a task: `lazy task add --code`). */
    const grant = (body: { role: "agent" | "host"; profile?: string; task?: string }) => mintGrant(api, token, body);
    return { root, home, env, state, token, api, pid: rt.pid, lazy, grant, stop };
  } catch (e) {
    stop();
    throw e;
  }
}

/**
 * nginx as a plain reverse proxy to 127.0.0.1:`upPort` (keep-alive upstream, `workers` worker
 * processes), its config, pid and temp files in `dir`: its port and process (kill it when done).
 */
export async function startNginx(dir: string, upPort: number, workers: number) {
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(
    join(dir, "nginx.conf"),
    `worker_processes ${workers}; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/error.log;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir};
  upstream up { server 127.0.0.1:${upPort}; keepalive 128; }
  server { listen 127.0.0.1:${port};
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } } }`,
  );
  const proc = Bun.spawn(["nginx", "-c", join(dir, "nginx.conf")], { stdout: "ignore", stderr: "inherit" });
  await Bun.sleep(300);
  return { port, proc };
}

/**
 * wrk with `args` (all after "wrk"), its report read: latency at a percentile in ms (with
 * --latency), req/s, how many requests, wrk's own CPU time (µs). Throws, naming `what`, when an
 * answer was not 2xx or 3xx.
 */
export async function runWrk(args: string[], what: string) {
  const proc = Bun.spawn(["wrk", ...args], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const errors = out.match(/Non-2xx or 3xx responses: (\d+)/)?.[1];
  if (errors) throw new Error(`${what}: ${errors} non-2xx responses\n${out}`);
  const ms = (percent: string) => {
    const m = out.match(new RegExp(`\\s${percent}%\\s+([\\d.]+)(us|ms|s)`));
    if (!m) return NaN;
    const v = Number(m[1]);
    return m[2] === "us" ? v / 1000 : m[2] === "s" ? v * 1000 : v;
  };
  return {
    ms,
    rps: Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1] ?? NaN),
    requests: Number(out.match(/(\d+) requests in/)?.[1] ?? NaN),
    cpuUs: Number(proc.resourceUsage()?.cpuTime.total ?? NaN),
  };
}

/** The request the proxy benches send: one small Messages call. */
export const BENCH_BODY = JSON.stringify({ model: "m", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });

/** What their mock upstreams answer it with: a short message and its usage. */
export const BENCH_ANSWER = JSON.stringify({
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "m",
  content: [{ type: "text", text: "hello" }],
  stop_reason: "end_turn",
  usage: { input_tokens: 5, output_tokens: 2 },
});

/** The Anthropic key the benches store (a made-up one: the upstream is a mock). */
export const BENCH_KEY = "sk-ant-api03-BENCH-" + "b".repeat(79) + "AA";

/**
 * A project whose tasks run in containers (the container benches: start, mcp, oneshot): a temp
 * root (0755, so the agent's uid can read it) and LAZY_HOME, a git repo with one commit,
 * `lazy.toml` with the container base and Anthropic at `upstream`, and a stored key (which starts
 * the daemon). `sh` runs a command there and returns its stdout (throws on failure); `dispose`
 * removes the project's containers, stops the daemon and removes both folders.
 */
export function containerProject(bin: string, label: string, base: string, upstream: string, extraEnv: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), `lazy-bench-${label}-`));
  chmodSync(root, 0o755);
  const home = mkdtempSync(join(tmpdir(), `lazy-bench-${label}-home-`));
  const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file", ...extraEnv };
  const sh = (cmd: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) => {
    const r = Bun.spawnSync(cmd, { cwd: opts.cwd ?? root, env: opts.env ?? env, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")}: ${r.stderr}`);
    return r.stdout.toString();
  };
  sh(["git", "init", "-q", "-b", "main"]);
  sh(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "--allow-empty", "-m", "init"]);
  writeFileSync(join(root, "lazy.toml"), `[container]\nbase = "${base}"\n\n[proxy.upstreams]\nanthropic = "${upstream}"\n`);
  trustToml(bin, root, env);
  Bun.spawnSync([bin, "auth", "set", "anthropic"], { cwd: root, env, stdin: new Blob(["sk-ant-api03-BENCH-" + "s".repeat(79) + "AA"]) });
  const dispose = () => {
    const ids = sh(["docker", "ps", "-aq", "--filter", `label=dev.lazy.root=${root}`])
      .split("\n")
      .filter(Boolean);
    if (ids.length) Bun.spawnSync(["docker", "rm", "-f", ...ids]);
    Bun.spawnSync([bin, "daemon", "stop"], { cwd: root, env });
    // The project's network and the firewall rules for its bridge (Docker's address pools are small).
    const slug = readdirSync(join(home, "daemon"))[0];
    const net = slug ? Bun.spawnSync(["docker", "network", "inspect", `lazy-${slug}`]) : undefined;
    if (net?.exitCode === 0) {
      Bun.spawnSync(["docker", "network", "rm", `lazy-${slug}`]);
      const n = (JSON.parse(net.stdout.toString()) as { Id: string; Options?: Record<string, string> }[])[0];
      if (n && process.getuid?.() === 0) Bun.spawnSync(["sh", "-c", LinkLocal.removeScript(LinkLocal.bridgeOf(n), Fence.removeLines())]);
    }
    rmSync(root, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  };
  return { root, home, env, sh, dispose };
}

/**
 * A placeholder grant from a daemon's API, as a launch gets one. Since issue 26 a grant redeems
 * only while what it is for runs: here the bench's own process (`pid`). A build from before
 * knows no `pid` and refuses it (400): asked again without.
 */
export async function mintGrant(
  api: string,
  token: string,
  body: { role: "agent" | "host"; profile?: string; task?: string },
): Promise<{ placeholder: string; proxyUrl: string }> {
  const ask = (b: object) =>
    fetch(`${api}/api/proxy/grants`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(b),
    });
  let res = await ask({ ...body, pid: process.pid });
  if (res.status === 400) res = await ask(body);
  if (!res.ok) throw new Error(`POST /api/proxy/grants answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { placeholder: string; proxyUrl: string };
}
