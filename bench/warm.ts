/**
 * How lazy's CPU a request settles under steady load: the proxy alone (a mock upstream in its
 * own process, wrk at 50 connections), window after window, with the daemon's CPU per request
 * (all threads, /proc) and its threads' share printed for each. It shows how long the JIT's
 * compilation counts in a bench's first rounds, and what steady state costs.
 * Run: bun run build && bun bench/warm.ts [windows] [seconds-per-window]   (needs wrk; loopback only)
 * LAZY_BENCH_HOLD=1 waits after the windows (load on) for a profiler: `perf record -p PID`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { BENCH_ANSWER, BENCH_BODY, proxyProject, runWrk } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const windows = Number(process.argv[2] ?? 10);
const secs = Number(process.argv[3] ?? 4);

if (process.argv[2] === "upstream") {
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: () =>
      new Response(BENCH_ANSWER, { headers: { "content-type": "application/json", "anthropic-ratelimit-unified-5h-utilization": "0.1" } }),
  });
  console.log(s.port);
  await new Promise(() => {});
}
const upstreamProc = Bun.spawn([process.execPath, import.meta.path, "upstream"], { stdout: "pipe", stderr: "inherit" });
const upPort = Number(new TextDecoder().decode((await upstreamProc.stdout.getReader().read()).value).trim());
const p = await proxyProject(BIN, `http://127.0.0.1:${upPort}`, "", "warm");
try {
  const grant = await p.grant({ role: "host", profile: "claude" });
  const lua = `${p.root}/post.lua`;
  await Bun.write(
    lua,
    `wrk.method = "POST"\nwrk.body = '${BENCH_BODY}'\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${grant.placeholder}"\n`,
  );
  const ticks = (path: string) => {
    const s = readFileSync(path, "utf8");
    const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]);
  };
  const threads = () => {
    const out = new Map<string, number>();
    for (const t of readdirSync(`/proc/${p.pid}/task`)) {
      const name = readFileSync(`/proc/${p.pid}/task/${t}/comm`, "utf8").trim();
      out.set(`${name}#${t}`, ticks(`/proc/${p.pid}/task/${t}/stat`));
    }
    return out;
  };
  console.log(`daemon pid ${p.pid}; ${windows} windows of ${secs}s at 50 connections`);
  for (let i = 0; i < windows; i++) {
    const before = threads();
    const r = await runWrk(["-t", "2", "-c", "50", "-d", `${secs}s`, "-s", lua, `${grant.proxyUrl}/v1/messages`], "lazy");
    const after = threads();
    const per = new Map<string, number>();
    for (const [k, v] of after) {
      const name = k.split("#")[0]!;
      per.set(name, (per.get(name) ?? 0) + ((v - (before.get(k) ?? 0)) * 1e4) / r.requests);
    }
    const total = [...per.values()].reduce((a, b) => a + b, 0);
    const parts = [...per]
      .filter(([, v]) => v >= 0.5)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${v.toFixed(1)}`);
    console.log(`window ${i + 1}: ${r.rps.toFixed(0)} req/s, CPU µs/request ${total.toFixed(1)} (${parts.join(", ")})`);
  }
  if (process.env.LAZY_BENCH_HOLD === "1") {
    console.log(`holding load on pid ${p.pid} for 60 s`);
    await runWrk(["-t", "2", "-c", "50", "-d", "60s", "-s", lua, `${grant.proxyUrl}/v1/messages`], "lazy");
  }
} finally {
  p.stop();
  upstreamProc.kill();
}
