/**
 * The proxy against a mock upstream, in one run: direct, through lazy, through nginx as a
 * plain reverse proxy (same upstream, keep-alive on both sides), and through Portkey's gateway
 * (`@portkey-ai/gateway`, the Anthropic route with a custom host: a gateway users pick).
 *  - added latency p50/p99 at 1 connection (wrk --latency), vs direct;
 *  - req/s at 1 and 50 connections, vs nginx (target: lazy ≥ 60 % of nginx, audit on);
 *  - lazy's RSS holding 2,000 concurrent idle SSE streams (target ≤ 300 MB).
 * Run: bun run build && bun bench/proxy.ts [seconds-per-run] [rounds]
 * To compare a setting side by side: LAZY_BENCH_COMPARE="MIMALLOC_PURGE_DELAY=600000" starts a
 * second daemon with that in its environment, measured in turn with the others ("lazy+");
 * LAZY_BENCH_COMPARE="BIN=/path/to/an/older/lazy" runs that binary as the second daemon.
 * Needs wrk and nginx (Debian: wrk nginx-light), and node + npm for Portkey: it is installed
 * once into $TMPDIR/lazy-bench-portkey-VERSION (95 packages, 25 MB: too big a devDependency
 * for a bench), never into the repository. LAZY_BENCH_PORTKEY=0 leaves it out. Only loopback
 * is used (Portkey's Node server binds every interface; it runs only for the bench).
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { threadCount } from "../src/proxy/listen/shared-port";
import { BENCH_ANSWER as ANSWER, BENCH_BODY as BODY, BENCH_KEY as KEY, mintGrant, runWrk, startNginx, trustToml } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const secs = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 3);

// The upstream: as fast as Bun can answer, so it is not what is measured. It runs in a process
// of its own (this file, with the argument "upstream"), so the bench's own work never stalls it.
if (process.argv[2] === "upstream") {
  const upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      if (req.headers.get("x-bench-sse")) {
        // An SSE stream that sends one event, then stays open and quiet.
        return new Response(
          new ReadableStream({
            start(c) {
              c.enqueue(new TextEncoder().encode("event: ping\ndata: {}\n\n"));
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        );
      }
      return new Response(ANSWER, { headers: { "content-type": "application/json", "anthropic-ratelimit-unified-5h-utilization": "0.1" } });
    },
  });
  console.log(upstream.port);
  await new Promise(() => {});
}
const upstreamProc = Bun.spawn([process.execPath, import.meta.path, "upstream"], { stdout: "pipe", stderr: "inherit" });
const upPort = Number(new TextDecoder().decode((await upstreamProc.stdout.getReader().read()).value).trim());
const up = `http://127.0.0.1:${upPort}`;

/** A project and LAZY_HOME of its own, and its daemon started with `extra` in its environment. */
function daemonSetup({ BIN: bin = BIN, ...extra }: Record<string, string>) {
  const root = mkdtempSync(join(tmpdir(), "lazy-bench-proxy-"));
  chmodSync(root, 0o755);
  const home = mkdtempSync(join(tmpdir(), "lazy-bench-proxy-home-"));
  const env = { ...(process.env as Record<string, string>), ...extra, LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file" };
  Bun.spawnSync(["git", "init", "-q", root]);
  writeFileSync(join(root, "lazy.toml"), `[proxy.upstreams]\nanthropic = "${up}"\n`);
  trustToml(bin, root, env);
  const lazy = (args: string[], stdin?: string) => {
    const r = Bun.spawnSync([bin, ...args], { cwd: root, env, stdin: stdin === undefined ? "ignore" : new Blob([stdin]) });
    if (r.exitCode !== 0) throw new Error(`lazy ${args.join(" ")}: ${r.stderr}`);
    return r.stdout.toString();
  };
  return { root, home, env, lazy, bin };
}
const compare = process.env.LAZY_BENCH_COMPARE
  ? Object.fromEntries(
      process.env.LAZY_BENCH_COMPARE.split(/\s+/)
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
    )
  : undefined;
const { root, home, env, lazy } = daemonSetup({});

/** Portkey's gateway, installed once under the temp folder; its node process, on `port`. */
const PORTKEY_VERSION = "1.15.2";
async function portkey(port: number): Promise<ReturnType<typeof Bun.spawn> | undefined> {
  if (process.env.LAZY_BENCH_PORTKEY === "0" || !Bun.which("node") || !Bun.which("npm")) return undefined;
  const dir = join(tmpdir(), `lazy-bench-portkey-${PORTKEY_VERSION}`);
  const entry = join(dir, "node_modules/@portkey-ai/gateway/build/start-server.js");
  if (!existsSync(entry)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "package.json"), '{"private":true}');
    const r = Bun.spawnSync(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts", `@portkey-ai/gateway@${PORTKEY_VERSION}`], {
      cwd: dir,
      stdout: "ignore",
      stderr: "pipe",
    });
    if (r.exitCode !== 0) {
      console.error(`Portkey left out: npm install failed: ${r.stderr.toString().slice(0, 300)}`);
      return undefined;
    }
  }
  // `--port=N` (with "="): the gateway ignores `--port N`.
  const proc = Bun.spawn(["node", entry, `--port=${port}`, "--headless"], {
    cwd: dir,
    env: { ...process.env, NODE_ENV: "production" },
    stdout: "ignore",
    stderr: "ignore",
  });
  for (let i = 0; i < 100; i++) {
    await Bun.sleep(100);
    if (
      await fetch(`http://127.0.0.1:${port}/`).then(
        (r) => r.ok,
        () => false,
      )
    )
      return proc;
  }
  proc.kill();
  console.error("Portkey left out: its gateway did not answer within 10 s");
  return undefined;
}
const second = compare ? daemonSetup(compare) : undefined;

/** The grant and the daemon's pid and proxy address, once `lazy auth set` has started it. */
async function started(d: ReturnType<typeof daemonSetup>) {
  d.lazy(["auth", "set", "anthropic"], KEY);
  const state = join(d.home, "daemon", readdirSync(join(d.home, "daemon"))[0]!);
  const token = readFileSync(join(state, "token"), "utf8").trim();
  const rt = JSON.parse(readFileSync(join(state, "daemon.json"), "utf8"));
  const grant = await mintGrant(`http://127.0.0.1:${rt.api.port}`, token, { role: "host", profile: "claude" });
  return { grant, pid: rt.pid as number };
}

let nginx: ReturnType<typeof Bun.spawn> | undefined;
let portkeyProc: ReturnType<typeof Bun.spawn> | undefined;
const nginxDir = mkdtempSync(join(tmpdir(), "lazy-bench-nginx-"));
try {
  const { grant, pid: daemonPid } = await started({ root, home, env, lazy, bin: BIN });
  const other = second ? await started(second) : undefined;

  // nginx as a plain reverse proxy, keep-alive upstream, with as many workers as lazy has proxy
  // threads (two on a Linux machine of 2+ cores: what Debian's `worker_processes auto` gives
  // on this 2-core machine; one worker did 2-17 % fewer req/s here, median 9 %, 6 rounds).
  const workers = threadCount(env);
  const ng = await startNginx(nginxDir, upPort, workers);
  const nginxPort = ng.port;
  nginx = ng.proc;

  const script = (name: string, placeholder: string) => {
    const f = join(nginxDir, name);
    writeFileSync(
      f,
      `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${placeholder}"\n`,
    );
    return f;
  };
  const lua = script("post.lua", grant.placeholder);
  // Portkey's Anthropic route to the same upstream: the provider's key, the custom host.
  const portkeyPort = 20000 + Math.floor(Math.random() * 20000);
  portkeyProc = await portkey(portkeyPort);
  const luaPortkey = join(nginxDir, "portkey.lua");
  writeFileSync(
    luaPortkey,
    `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${KEY}"\nwrk.headers["anthropic-version"] = "2023-06-01"\nwrk.headers["x-portkey-provider"] = "anthropic"\nwrk.headers["x-portkey-custom-host"] = "${up}/v1"\n`,
  );
  const lua2 = other ? script("post2.lua", other.grant.placeholder) : lua;
  // CPU time per request, from /proc (all threads of a process): it says how much work each
  // proxy does for a request, where req/s on a shared machine also depends on who else runs.
  const nginxWorkers = Bun.spawnSync(["pgrep", "-P", String(nginx.pid)])
    .stdout.toString()
    .trim()
    .split("\n")
    .map(Number);
  const cpuUs = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100; // utime + stime, in clock ticks of 1/100 s
  };
  const cpuOf = (pids: number[]) => pids.reduce((sum, p) => sum + cpuUs(p), 0);
  const proxyPids: Record<string, number[]> = {
    lazy: [daemonPid],
    nginx: nginxWorkers,
    ...(other ? { "lazy+": [other.pid] } : {}),
    ...(portkeyProc ? { portkey: [portkeyProc.pid] } : {}),
  };

  // Async: the upstream lives in this process, and a synchronous spawn would stall it.
  const wrk = async (url: string, conns: number, proxy?: string) => {
    const pids = [(proxy && proxyPids[proxy]) || [], [upstreamProc.pid]];
    const before = pids.map(cpuOf);
    const luaFile = proxy === "lazy+" ? lua2 : proxy === "portkey" ? luaPortkey : lua;
    const r = await runWrk(
      ["-t", conns > 1 ? "2" : "1", "-c", String(conns), "-d", `${secs}s`, "--latency", "-s", luaFile, `${url}/v1/messages`],
      url,
    );
    const n = r.requests;
    const [proxyCpu, upCpu] = pids.map((ps, i) => (ps.length ? (cpuOf(ps) - before[i]!) / n : NaN));
    return { p50: r.ms("50"), p99: r.ms("99"), rps: r.rps, cpu: { proxy: proxyCpu!, upstream: upCpu!, wrk: r.cpuUs / n } };
  };

  const targets: Record<string, string> = {
    direct: up,
    lazy: grant.proxyUrl,
    nginx: `http://127.0.0.1:${nginxPort}`,
    ...(other ? { "lazy+": other.grant.proxyUrl } : {}),
    ...(portkeyProc ? { portkey: `http://127.0.0.1:${portkeyPort}` } : {}),
  };
  for (const [k, u] of Object.entries(targets)) await wrk(u, 50, k); // warm up (the JIT, both pools)
  // This machine's CPU is shared and its speed drifts from one minute to the next: the three are
  // measured in turn, round after round, and each figure is the median over the rounds.
  type Cpu = { proxy: number; upstream: number; wrk: number };
  type Run = { p50: number; p99: number; rps: number; cpu: Cpu };
  const oneRuns: Record<string, Run[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  const fiftyRuns: Record<string, Run[]> = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
  const ratios: number[] = [];
  const ratios2: number[] = [];
  const ratiosPortkey: number[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const [k, u] of Object.entries(targets)) oneRuns[k]!.push(await wrk(u, 1, k));
    for (const [k, u] of Object.entries(targets)) fiftyRuns[k]!.push(await wrk(u, 50, k));
    ratios.push(fiftyRuns.lazy!.at(-1)!.rps / fiftyRuns.nginx!.at(-1)!.rps);
    if (other) ratios2.push(fiftyRuns["lazy+"]!.at(-1)!.rps / fiftyRuns.nginx!.at(-1)!.rps);
    if (portkeyProc) ratiosPortkey.push(fiftyRuns.lazy!.at(-1)!.rps / fiftyRuns.portkey!.at(-1)!.rps);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const med = (runs: Run[]): Run => ({
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    rps: median(runs.map((r) => r.rps)),
    cpu: {
      proxy: median(runs.map((r) => r.cpu.proxy)),
      upstream: median(runs.map((r) => r.cpu.upstream)),
      wrk: median(runs.map((r) => r.cpu.wrk)),
    },
  });
  const one = Object.fromEntries(Object.entries(oneRuns).map(([k, v]) => [k, med(v)]));
  const fifty = Object.fromEntries(Object.entries(fiftyRuns).map(([k, v]) => [k, med(v)]));

  // 2,000 concurrent idle SSE streams through lazy.
  const rss = () => Number(readFileSync(`/proc/${daemonPid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024;
  const before = rss();
  const client = Bun.spawn(
    [
      process.execPath,
      "-e",
      `
    const n = 2000, url = ${JSON.stringify(grant.proxyUrl)} + "/v1/messages";
    const open = [];
    for (let i = 0; i < n; i++) open.push(fetch(url, { method: "POST", headers: { "x-api-key": ${JSON.stringify(grant.placeholder)}, "content-type": "application/json", "x-bench-sse": "1" }, body: '{"stream":true}' }).then(async (r) => { const rd = r.body.getReader(); await rd.read(); return rd; }));
    const readers = await Promise.all(open);
    console.log("open", readers.length);
    await Bun.sleep(60000);
  `,
    ],
    { env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" }, stdout: "pipe" },
  );
  const reader = client.stdout.getReader();
  const first = await Promise.race([reader.read(), Bun.sleep(60_000).then(() => null)]);
  const opened = first ? new TextDecoder().decode(first.value) : "timeout";
  await Bun.sleep(1000);
  const during = rss();
  client.kill();

  const f = (n: number) => n.toFixed(3);
  console.log(
    `proxy bench, ${secs}s per run, ${rounds} rounds (medians), lazy's proxy threads and nginx's workers: ${workers}, ${new Date().toISOString()}`,
  );
  console.log(
    `latency at 1 connection (p50 / p99 ms): direct ${f(one.direct!.p50)} / ${f(one.direct!.p99)}, lazy ${f(one.lazy!.p50)} / ${f(one.lazy!.p99)}, nginx ${f(one.nginx!.p50)} / ${f(one.nginx!.p99)}`,
  );
  console.log(
    `added by lazy: p50 ${f(one.lazy!.p50 - one.direct!.p50)} ms, p99 ${f(one.lazy!.p99 - one.direct!.p99)} ms   (target: ≤ 0.15 ms p50); nginx adds p50 ${f(one.nginx!.p50 - one.direct!.p50)} ms`,
  );
  console.log(
    `req/s at 1 connection: direct ${one.direct!.rps.toFixed(0)}, lazy ${one.lazy!.rps.toFixed(0)}, nginx ${one.nginx!.rps.toFixed(0)} → lazy/nginx ${(one.lazy!.rps / one.nginx!.rps).toFixed(2)}`,
  );
  console.log(
    `req/s at 50 connections: direct ${fifty.direct!.rps.toFixed(0)}, lazy ${fifty.lazy!.rps.toFixed(0)}, nginx ${fifty.nginx!.rps.toFixed(0)} → lazy/nginx ${(fifty.lazy!.rps / fifty.nginx!.rps).toFixed(2)}; per round ${ratios.map((r) => r.toFixed(2)).join(" ")}, median ${median(ratios).toFixed(2)}   (target: ≥ 0.60, audit on)`,
  );
  if (other) {
    console.log(
      `lazy+ (${process.env.LAZY_BENCH_COMPARE}): req/s at 50 connections ${fifty["lazy+"]!.rps.toFixed(0)} → lazy+/nginx per round ${ratios2.map((r) => r.toFixed(2)).join(" ")}, median ${median(ratios2).toFixed(2)}; CPU µs per request ${fifty["lazy+"]!.cpu.proxy.toFixed(1)}`,
    );
    // End to end, not req/s alone: what a request waits, idle and under load, side by side.
    const lat = (k: string) =>
      `${k} ${f(one[k]!.p50)} / ${f(one[k]!.p99)} at 1 connection, ${f(fifty[k]!.p50)} / ${f(fifty[k]!.p99)} at 50`;
    console.log(`latency p50 / p99 ms: ${lat("lazy")}; ${lat("lazy+")}; ${lat("nginx")}`);
  }
  if (portkeyProc) {
    const pk = one.portkey!;
    const added = (r: Run) => r.p50 - one.direct!.p50;
    console.log(
      `Portkey gateway ${PORTKEY_VERSION} (one node process, Anthropic route): p50 / p99 at 1 connection ${f(pk.p50)} / ${f(pk.p99)} ms, adds p50 ${f(added(pk))} ms; req/s at 1 connection ${pk.rps.toFixed(0)}, at 50 ${fifty.portkey!.rps.toFixed(0)}`,
    );
    console.log(
      `lazy against Portkey: req/s at 50 connections ${(fifty.lazy!.rps / fifty.portkey!.rps).toFixed(2)}× (per round ${ratiosPortkey.map((r) => r.toFixed(2)).join(" ")}, median ${median(ratiosPortkey).toFixed(2)}), at 1 connection ${(one.lazy!.rps / pk.rps).toFixed(2)}×; added p50 ${(added(one.lazy!) / added(pk)).toFixed(2)}× Portkey's; CPU µs per request: Portkey ${fifty.portkey!.cpu.proxy.toFixed(1)}`,
    );
  }
  const us = (c: Cpu) => `proxy ${c.proxy.toFixed(1)}, upstream ${c.upstream.toFixed(1)}, wrk ${c.wrk.toFixed(1)}`;
  console.log(
    `CPU µs per request at 50 connections: lazy: ${us(fifty.lazy!.cpu)}; nginx: ${us(fifty.nginx!.cpu)}; direct: upstream ${fifty.direct!.cpu.upstream.toFixed(1)}, wrk ${fifty.direct!.cpu.wrk.toFixed(1)}`,
  );
  console.log(
    `RSS with 2,000 idle SSE streams (${opened.trim()}): ${during.toFixed(0)} MB (idle before: ${before.toFixed(0)} MB)   (target: ≤ 300 MB)`,
  );
} finally {
  nginx?.kill();
  portkeyProc?.kill();
  Bun.spawnSync([BIN, "daemon", "stop"], { cwd: root, env });
  if (second) Bun.spawnSync([second.bin, "daemon", "stop"], { cwd: second.root, env: second.env });
  upstreamProc.kill();
  for (const d of [root, home, nginxDir, ...(second ? [second.root, second.home] : [])]) rmSync(d, { recursive: true, force: true });
}
