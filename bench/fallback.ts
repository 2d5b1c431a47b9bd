/**
 * What a [[proxy.fallback]] reroute costs (issue 29: "a reroute to a fallback adds ≤ 5 ms beyond
 * the fallback's own answer time"). Two mock upstreams in a process of their own: the primary
 * answers every request 529 at once, the fallback answers 200. Measured in turn, round after
 * round, at one connection (wrk --latency), medians over the rounds:
 *  - direct: the fallback's own answer time;
 *  - plain: through lazy to the fallback as its primary (what lazy adds to any request);
 *  - rerouted: through lazy, the primary's 529 and then the fallback (its own credential).
 * The reroute's cost is rerouted − direct (it includes the primary's round trip and the plain
 * proxying); rerouted − plain is the reroute alone.
 * Run: bun run build && bun bench/fallback.ts [seconds-per-run] [rounds]
 * Needs wrk. Only loopback is used.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BENCH_ANSWER as ANSWER, BENCH_BODY as BODY, proxyProject, runWrk } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const secs = Number(process.argv[2] ?? 4);
const rounds = Number(process.argv[3] ?? 5);
const OVERLOADED = JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });

if (process.argv[2] === "upstreams") {
  const serve = (status: number, body: string) =>
    Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: () => new Response(body, { status, headers: { "content-type": "application/json" } }),
    }).port;
  console.log(`${serve(529, OVERLOADED)} ${serve(200, ANSWER)}`);
  await new Promise(() => {});
}
const ups = Bun.spawn([process.execPath, import.meta.path, "upstreams"], { stdout: "pipe", stderr: "inherit" });
const [primaryPort, fallbackPort] = new TextDecoder()
  .decode((await ups.stdout.getReader().read()).value)
  .trim()
  .split(" ")
  .map(Number);
const primary = `http://127.0.0.1:${primaryPort}`;
const fallback = `http://127.0.0.1:${fallbackPort}`;

const dir = mkdtempSync(join(tmpdir(), "lazy-bench-fallback-"));
const rerouting = await proxyProject(
  BIN,
  primary,
  `\n[[proxy.fallback]]\nname = "backup"\nendpoint = "${fallback}"\nwire = "anthropic"\ncredential = "backup"\n`,
  "fallback",
);
const plain = await proxyProject(BIN, fallback, "", "fallback-plain");
try {
  rerouting.lazy(["auth", "set", "backup"], `backup-key-${"b".repeat(40)}`);
  const lua = (name: string, key: string) => {
    const f = join(dir, name);
    writeFileSync(
      f,
      `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${key}"\n`,
    );
    return f;
  };
  const r = await rerouting.grant({ role: "host", profile: "claude" });
  const p = await plain.grant({ role: "host", profile: "claude" });
  const targets: Record<string, { url: string; script: string }> = {
    direct: { url: fallback, script: lua("direct.lua", "sk-direct") },
    plain: { url: p.proxyUrl, script: lua("plain.lua", p.placeholder) },
    rerouted: { url: r.proxyUrl, script: lua("rerouted.lua", r.placeholder) },
  };
  const wrk = async (url: string, script: string, s = secs) => {
    const r = await runWrk(["-t", "1", "-c", "1", "-d", `${s}s`, "--latency", "-s", script, `${url}/v1/messages`], url);
    return { p50: r.ms("50"), p99: r.ms("99"), rps: r.rps };
  };
  for (const t of Object.values(targets)) await wrk(t.url, t.script, 2); // warm up
  const runs: Record<string, { p50: number; p99: number; rps: number }[]> = { direct: [], plain: [], rerouted: [] };
  for (let i = 0; i < rounds; i++) for (const [k, t] of Object.entries(targets)) runs[k]!.push(await wrk(t.url, t.script));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const m = Object.fromEntries(
    Object.entries(runs).map(([k, v]) => [
      k,
      { p50: median(v.map((x) => x.p50)), p99: median(v.map((x) => x.p99)), rps: median(v.map((x) => x.rps)) },
    ]),
  );
  const f = (n: number) => n.toFixed(3);
  const perRound = runs.rerouted!.map((x, i) => f(x.p50 - runs.direct![i]!.p50)).join(" ");
  console.log(`fallback bench, ${secs}s per run, ${rounds} rounds (medians), 1 connection, ${new Date().toISOString()}`);
  for (const k of ["direct", "plain", "rerouted"])
    console.log(`${k.padEnd(9)} p50 ${f(m[k]!.p50)} ms, p99 ${f(m[k]!.p99)} ms, ${m[k]!.rps.toFixed(0)} req/s`);
  console.log(
    `a reroute adds p50 ${f(m.rerouted!.p50 - m.direct!.p50)} ms beyond the fallback's own answer (per round: ${perRound}), p99 ${f(m.rerouted!.p99 - m.direct!.p99)} ms   (target: ≤ 5 ms); of it, the reroute beyond plain proxying: p50 ${f(m.rerouted!.p50 - m.plain!.p50)} ms`,
  );
} finally {
  rerouting.stop();
  plain.stop();
  ups.kill();
  rmSync(dir, { recursive: true, force: true });
}
