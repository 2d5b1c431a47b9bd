/**
 * What one request plugin costs the request path: two daemons against one mock upstream, one
 * with a no-op plugin in [[proxy.plugins]] and one with none, measured in turn with wrk at 50
 * connections over several rounds (this VM's speed drifts: compare only within one run).
 * Target (issue 29): with the plugin, req/s ≥ 90 % of without. Also p50 at 1 connection, and
 * each daemon's CPU time per request (all its threads, from /proc): steadier than req/s when
 * the machine is shared.
 * Run: bun run build && bun bench/plugin.ts [seconds-per-run] [rounds]
 * Needs wrk. Only loopback is used.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { BENCH_ANSWER as ANSWER, BENCH_BODY as BODY, pct, proxyProject, runWrk } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const secs = Number(process.argv[2] ?? 5);
const rounds = Number(process.argv[3] ?? 5);

// The upstream, in a process of its own (this file with the argument "upstream").
if (process.argv[2] === "upstream") {
  const s = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: () => new Response(ANSWER, { headers: { "content-type": "application/json" } }),
  });
  console.log(s.port);
  await new Promise(() => {});
}
const upstreamProc = Bun.spawn([process.execPath, import.meta.path, "upstream"], { stdout: "pipe", stderr: "inherit" });
const up = `http://127.0.0.1:${Number(new TextDecoder().decode((await upstreamProc.stdout.getReader().read()).value).trim())}`;

const PLUGIN = `[[proxy.plugins]]\nname = "noop"\npath = "noop.ts"\n`;
const install = (home: string) => {
  mkdirSync(join(home, "plugins"), { mode: 0o700 });
  writeFileSync(join(home, "plugins", "noop.ts"), "export default () => {};\n", { mode: 0o600 });
};
// The daemon started first measured slower in every run here, whichever it was: LAZY_BENCH_SWAP=1
// starts the plugin's first, so the two orders can be compared.
const swap = process.env.LAZY_BENCH_SWAP === "1";
const one0 = swap ? await proxyProject(BIN, up, PLUGIN, "plugin-one", install) : undefined;
const none = await proxyProject(BIN, up, "", "plugin-none");
const one = one0 ?? (await proxyProject(BIN, up, PLUGIN, "plugin-one", install));
console.log(`started first: ${swap ? "noop plugin" : "none"}`);
const dir = mkdtempSync(join(tmpdir(), "lazy-bench-plugin-"));
try {
  const targets: Record<string, { url: string; lua: string; pid: number }> = {};
  for (const [name, p] of [
    ["none", none],
    ["noop plugin", one],
  ] as const) {
    const g = await p.grant({ role: "host", profile: "claude" });
    const lua = join(dir, `${name.replace(/\W/g, "")}.lua`);
    writeFileSync(
      lua,
      `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${g.placeholder}"\n`,
    );
    targets[name] = { url: `${g.proxyUrl}/v1/messages`, lua, pid: p.pid };
  }
  chmodSync(dir, 0o755);

  const cpuUs = (pid: number) => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100; // utime + stime, clock ticks of 1/100 s
  };
  const wrk = async (t: { url: string; lua: string; pid: number }, conns: number) => {
    const before = cpuUs(t.pid);
    const r = await runWrk(["-t", conns > 1 ? "2" : "1", "-c", String(conns), "-d", `${secs}s`, "--latency", "-s", t.lua, t.url], t.url);
    return { rps: r.rps, p50: r.ms("50"), cpu: (cpuUs(t.pid) - before) / r.requests };
  };

  for (const t of Object.values(targets)) await wrk(t, 50); // warm up
  const rps: Record<string, number[]> = { none: [], "noop plugin": [] };
  const p50: Record<string, number[]> = { none: [], "noop plugin": [] };
  const cpu: Record<string, number[]> = { none: [], "noop plugin": [] };
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so neither always meets the VM in the same phase.
    const order = i % 2 ? ["noop plugin", "none"] : ["none", "noop plugin"];
    for (const k of order) {
      const r = await wrk(targets[k]!, 50);
      rps[k]!.push(r.rps);
      cpu[k]!.push(r.cpu);
      p50[k]!.push((await wrk(targets[k]!, 1)).p50);
    }
    ratios.push(rps["noop plugin"]!.at(-1)! / rps.none!.at(-1)!);
    console.log(`round ${i + 1}: none ${rps.none!.at(-1)!.toFixed(0)} req/s, noop plugin ${rps["noop plugin"]!.at(-1)!.toFixed(0)} req/s`);
  }
  const med = (xs: number[]) => pct(xs, 50);
  console.log(`\nreq/s at 50 connections, median of ${rounds} interleaved rounds of ${secs} s:`);
  for (const k of Object.keys(rps))
    console.log(
      `  ${k.padEnd(12)} ${med(rps[k]!).toFixed(0)} req/s, ${med(cpu[k]!).toFixed(1)} µs CPU a request, p50 at 1 connection ${med(p50[k]!).toFixed(3)} ms`,
    );
  console.log(`  CPU a request, noop plugin / none: ${(med(cpu["noop plugin"]!) / med(cpu.none!)).toFixed(3)}`);
  console.log(
    `  ratio noop plugin / none: ${med(ratios).toFixed(3)} (per round: ${ratios.map((r) => r.toFixed(2)).join(", ")}; target ≥ 0.90)`,
  );
} finally {
  none.stop();
  one.stop();
  upstreamProc.kill();
  rmSync(dir, { recursive: true, force: true });
}
