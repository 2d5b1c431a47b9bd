/**
 * What the OpenTelemetry export costs per model call (issue 38: "≤ 2 % CPU per model call on the
 * proxy path"). The export does nothing on the proxy's path: when a turn ends, the daemon's main
 * thread makes the turn's spans from the store and the audit (src/telemetry) and the SDK's
 * exporter sends them. So its cost per model call is that main-thread work divided by the turn's
 * model calls, measured here for a turn of CALLS model calls, as many tool calls and 100 egress
 * decisions, with the collector down (a port nothing listens on) and up (a receiver in another
 * process that answers 200), process CPU (user + system) over the making and every export try
 * that follows within WINDOW_MS. Compare with the proxy's own CPU per request (bench/ab.ts,
 * bench/proxy-cpu.ts). Rounds alternate down/up; figures are medians.
 * Run: bun bench/otlp.ts [rounds]
 */
import type { AuditRow } from "../src/proxy";
import type { TaskEvent } from "../src/store";
import { matcherOf, scrubWith } from "../src/telemetry";
import { Exporter } from "../src/telemetry/export";
import { turnSpans } from "../src/telemetry/spans";

const rounds = Number(process.argv[2] ?? 5);
const CALLS = 1000;
const WINDOW_MS = 12_000;

if (process.argv[2] === "receiver") {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (r) => (await r.arrayBuffer(), new Response(new Uint8Array(0))) });
  console.log(s.port);
} else {
  const rx = Bun.spawn([process.execPath, import.meta.path, "receiver"], { stdout: "pipe" });
  const upPort = Number(new TextDecoder().decode((await rx.stdout.getReader().read()).value).trim());
  const t0 = Date.now() - 600_000;
  const rows: AuditRow[] = [];
  const events: TaskEvent[] = [];
  for (let i = 0; i < CALLS; i++) {
    const at = t0 + i * 500;
    rows.push({
      at,
      taskId: "t1",
      taskRef: "bench",
      role: "agent",
      profile: "claude",
      credential: "anthropic",
      upstream: "https://api.anthropic.com",
      method: "POST",
      path: "/v1/messages?beta=true",
      status: 200,
      durationMs: 300,
      ttfbMs: 100,
      bytesIn: 20_000,
      bytesOut: 3000,
      usage: { input: 2000, output: 300, cacheRead: 18_000, cacheWrite: 0 },
      retries: 0,
      note: null,
      hop: 0,
      lazyInMs: 0.08,
      lazyOutMs: 0.05,
      modelAsked: "claude-sonnet-4-5",
      modelServed: "claude-sonnet-4-5-20250929",
    });
    const iso = new Date(at + 350).toISOString();
    events.push({ id: i * 2, taskId: "t1", at: iso, kind: "tool", data: { name: "Bash", input: "ls", id: `toolu_${i}` } });
    events.push({ id: i * 2 + 1, taskId: "t1", at: iso, kind: "output", data: { text: "x", id: `toolu_${i}` } });
  }
  for (let i = 0; i < 100; i++)
    rows.push({ ...rows[i]!, role: "egress", upstream: "egress:registry.npmjs.org:443", method: "CONNECT", note: null, usage: null });
  // The daemon's scrub (src/telemetry/index.ts), for 8 grants.
  const scrub = scrubWith(matcherOf(Array.from({ length: 8 }, (_, i) => `sk-ant-api03-lazy-${String(i).repeat(88)}AA`)));
  const cpu = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  /** The same window with no export at all: what the process spends idle (timers, GC, the JIT finishing). */
  const idleRound = async () => {
    const c0 = cpu();
    await Bun.sleep(WINDOW_MS);
    return (cpu() - c0) / CALLS;
  };
  const oneRound = async (url: string) => {
    const said: (string | null)[] = [];
    const e = new Exporter(url, "bench", (f) => said.push(f));
    const c0 = cpu();
    const w0 = performance.now();
    const plan = turnSpans({
      taskId: "t1",
      taskRef: "bench",
      turn: 1,
      harness: "claude",
      wire: "anthropic",
      start: t0 - 1000,
      end: t0 + CALLS * 500 + 1000,
      to: "done",
      events,
      rows,
      scrub,
    });
    e.add(plan);
    const makeMs = performance.now() - w0;
    const makeCpu = cpu() - c0;
    await Bun.sleep(WINDOW_MS);
    const all = cpu() - c0;
    const stats = { ...e.stats };
    await e.stop();
    return { makeMs, makeUs: makeCpu / CALLS, allUs: all / CALLS, stats, warnings: said.filter((x) => x !== null).length };
  };
  await oneRound(`http://127.0.0.1:${upPort}`); // warm up
  const res: Record<string, Awaited<ReturnType<typeof oneRound>>[]> = { down: [], up: [] };
  const idle: number[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const which of i % 2 ? (["up", "down"] as const) : (["down", "up"] as const))
      res[which]!.push(await oneRound(which === "down" ? "http://127.0.0.1:9" : `http://127.0.0.1:${upPort}`));
    idle.push(await idleRound());
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `OTLP export, a turn of ${CALLS} model calls + ${CALLS} tool calls + 100 egress decisions, ${rounds} rounds, ${new Date().toISOString()}`,
  );
  console.log(
    `idle, the same ${WINDOW_MS / 1000} s with no export: ${med(idle).toFixed(2)} µs CPU per model call (subtract it from the windows below)`,
  );
  for (const k of ["down", "up"] as const) {
    const r = res[k]!;
    console.log(
      `collector ${k}: making + queueing the spans ${med(r.map((x) => x.makeMs)).toFixed(1)} ms (${med(r.map((x) => x.makeUs)).toFixed(2)} µs CPU per model call); with every export try in the next ${WINDOW_MS / 1000} s: ${med(r.map((x) => x.allUs)).toFixed(2)} µs CPU per model call; last round: ${JSON.stringify(r.at(-1)!.stats)}, warnings ${r.at(-1)!.warnings}`,
    );
  }
  rx.kill();
}
