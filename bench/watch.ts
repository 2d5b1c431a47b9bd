/**
 * Issue 19's watch target, measured against a baseline in the same run: "a proxied request
 * appears in `lazy watch` within 250 ms p50 (time from the upstream's answer to the line),
 * 1,000 requests a second through the proxy losing no line."
 *
 * A mock upstream (a process of its own) numbers each answer and puts the number in the
 * answer's usage (input_tokens = output_tokens = n), so every net line of `lazy watch --json`
 * names its request; it keeps the time it answered each one. This process reads the watch's
 * stdout and stamps each line as it arrives (both clocks are the machine's wall clock, read
 * with sub-millisecond precision). Requests go through an agent grant, as a task's would.
 * Each round:
 *  - idle: requests one at a time (a random pause between them), each waiting for its line:
 *    latency = line's arrival − upstream's answer; the baseline is the same request's own
 *    time end to end through the proxy, seen by its client ("watch adds X ms over the
 *    request itself");
 *  - load: a paced client (a process of its own, open loop) sends RATE requests a second for
 *    SECONDS; lost = answered requests whose line never arrived ({type:"dropped"} lines are
 *    counted and are lost too); latency under load as above.
 * Run: bun run build && bun bench/watch.ts [rounds] [seconds] [rates, comma-separated]
 *      (default 3 rounds, 10 s, 1000 req/s). Only loopback is used.
 */
import { resolve } from "node:path";
import { BENCH_BODY as BODY, pct, proxyProject } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
const wall = () => performance.timeOrigin + performance.now();

// The upstream: numbers each answer, keeps when it answered, and hands the times out on GET.
if (process.argv[2] === "upstream") {
  const stamps: number[] = [0];
  const upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/stamps") return Response.json(stamps.slice(Number(url.searchParams.get("from") ?? 1)));
      const n = stamps.length;
      const body = JSON.stringify({
        id: `msg_${n}`,
        type: "message",
        role: "assistant",
        model: "m",
        content: [{ type: "text", text: "hello" }],
        stop_reason: "end_turn",
        usage: { input_tokens: n, output_tokens: n },
      });
      stamps.push(wall());
      return new Response(body, { headers: { "content-type": "application/json", "x-bench-n": String(n) } });
    },
  });
  console.log(upstream.port);
  await new Promise(() => {});
}

// The paced client: RATE requests a second for SECONDS, open loop (a request is not held back
// by a slow answer to the one before), then one JSON line of what happened.
if (process.argv[2] === "client") {
  const [url, placeholder, rate, secs] = [process.argv[3]!, process.argv[4]!, Number(process.argv[5]), Number(process.argv[6])];
  const total = Math.round(rate * secs);
  let sent = 0;
  let ok = 0;
  let failed = 0;
  const e2e: number[] = [];
  const statuses: Record<string, number> = {};
  const inflight: Promise<void>[] = [];
  const one = async () => {
    const t = performance.now();
    try {
      const res = await fetch(`${url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": placeholder, "content-type": "application/json" },
        body: BODY,
      });
      await res.arrayBuffer();
      if (res.status === 200) ok++;
      else {
        failed++;
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
      e2e.push(performance.now() - t);
    } catch (e) {
      failed++;
      statuses[(e as Error).message] = (statuses[(e as Error).message] ?? 0) + 1;
    }
  };
  const start = performance.now();
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate));
    for (; sent < due; sent++) inflight.push(one());
    await Bun.sleep(1);
  }
  const sendMs = performance.now() - start;
  await Promise.all(inflight);
  console.log(JSON.stringify({ sent, ok, failed, statuses, rate: sent / (sendMs / 1000), e2eP50: pct(e2e, 50), e2eP95: pct(e2e, 95) }));
  process.exit(0);
}

const rounds = Number(process.argv[2] ?? 3);
const secs = Number(process.argv[3] ?? 10);
const rates = (process.argv[4] ?? "1000").split(",").map(Number);
const IDLE = 40; // requests one at a time, a round

const upstreamProc = Bun.spawn([process.execPath, import.meta.path, "upstream"], { stdout: "pipe", stderr: "inherit" });
const upPort = Number(new TextDecoder().decode((await upstreamProc.stdout.getReader().read()).value).trim());
const up = `http://127.0.0.1:${upPort}`;
const p = await proxyProject(BIN, up, "", "watch");
let watchProc: ReturnType<typeof Bun.spawn> | undefined;
try {
  p.lazy(["task", "add", "watch bench", "--code", "watch-bench"]);
  const grant = await p.grant({ role: "agent", task: "watch-bench" });

  // The watch, and what it prints: each net line's arrival by its request's number.
  const arrived = new Map<number, number>();
  let dropped = 0;
  let other = 0;
  let hello = false;
  watchProc = Bun.spawn([BIN, "watch", "--json"], { cwd: p.root, env: p.env, stdout: "pipe", stderr: "inherit" });
  void (async () => {
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of watchProc!.stdout as ReadableStream<Uint8Array>) {
      const now = wall();
      buf += dec.decode(chunk, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!text) continue;
        const item = JSON.parse(text) as { type: string; input?: number | null; output?: number | null; count?: number };
        if (item.type === "hello") hello = true;
        else if (item.type === "dropped") dropped += item.count ?? 0;
        else if (item.type === "net" && typeof item.output === "number" && item.output > 0) {
          if (!arrived.has(item.output)) arrived.set(item.output, now);
        } else other++;
      }
    }
  })();
  for (let i = 0; i < 100 && !hello; i++) await Bun.sleep(50);
  if (!hello) throw new Error("lazy watch printed no hello line within 5 s");

  const stamps = async (from: number) => (await (await fetch(`${up}/stamps?from=${from}`)).json()) as number[];
  /** Wait (bounded) until the lines of requests from..to-1 arrived, or nothing new came for 2 s. */
  const settle = async (from: number, to: number) => {
    let last = -1;
    let quietSince = performance.now();
    for (let i = 0; i < 600; i++) {
      let have = 0;
      for (let n = from; n < to; n++) if (arrived.has(n)) have++;
      if (have === to - from) return;
      if (have !== last) {
        last = have;
        quietSince = performance.now();
      } else if (performance.now() - quietSince > 2000) return;
      await Bun.sleep(50);
    }
  };
  let nextN = 1; // the upstream's next number
  const post = () =>
    fetch(`${grant.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": grant.placeholder, "content-type": "application/json" },
      body: BODY,
    });
  for (let i = 0; i < 20; i++) await (await post()).arrayBuffer(); // warm up (the JIT, the pool)
  nextN += 20;
  await settle(1, nextN);

  const idle = { latency: [] as number[], e2e: [] as number[], answer: [] as number[], missed: 0 };
  type Load = {
    rate: number;
    sent: number;
    ok: number;
    failed: number;
    lines: number;
    lost: number;
    latency: number[];
    e2eP50: number;
    e2eP95: number;
    achieved: number;
    statuses: Record<string, number>;
    dropped: number;
  };
  const loads: Load[] = [];
  for (let r = 0; r < rounds; r++) {
    // Idle: one request at a time; the pause puts each at a random point of the proxy's 50 ms flush.
    for (let i = 0; i < IDLE; i++) {
      const t0 = wall();
      const res = await post();
      const body = (await res.json()) as { usage: { output_tokens: number } };
      const t1 = wall();
      const n = body.usage.output_tokens;
      const answered = (await stamps(n))[0]!;
      nextN = n + 1;
      for (let k = 0; k < 200 && !arrived.has(n); k++) await Bun.sleep(1);
      const at = arrived.get(n);
      if (at === undefined) idle.missed++;
      else idle.latency.push(at - answered);
      idle.e2e.push(t1 - t0);
      idle.answer.push(t1 - answered);
      await Bun.sleep(Math.random() * 60);
    }
    // Load: the paced client, then what arrived.
    for (const rate of rates) {
      const from = nextN;
      const droppedBefore = dropped;
      const client = Bun.spawn(
        [process.execPath, import.meta.path, "client", grant.proxyUrl, grant.placeholder, String(rate), String(secs)],
        { stdout: "pipe", stderr: "inherit" },
      );
      const out = JSON.parse((await new Response(client.stdout).text()).trim()) as {
        sent: number;
        ok: number;
        failed: number;
        statuses: Record<string, number>;
        rate: number;
        e2eP50: number;
        e2eP95: number;
      };
      const times = await stamps(from);
      const to = from + times.length;
      await settle(from, to);
      nextN = to;
      const latency: number[] = [];
      for (let n = from; n < to; n++) {
        const at = arrived.get(n);
        if (at !== undefined) latency.push(at - times[n - from]!);
      }
      loads.push({
        rate,
        sent: out.sent,
        ok: out.ok,
        failed: out.failed,
        lines: latency.length,
        lost: out.ok - latency.length,
        latency,
        e2eP50: out.e2eP50,
        e2eP95: out.e2eP95,
        achieved: out.rate,
        statuses: out.statuses,
        dropped: dropped - droppedBefore,
      });
    }
  }

  const f = (n: number) => `${n.toFixed(1)} ms`;
  const median = (xs: number[]) => pct(xs, 50);
  console.log(
    `watch bench, ${rounds} rounds; idle: ${IDLE} requests a round one at a time; load: ${rates.join(", ")} req/s for ${secs} s a round; ${new Date().toISOString()}`,
  );
  console.log(
    `idle: upstream's answer → net line in lazy watch: p50 ${f(median(idle.latency))}, p95 ${f(pct(idle.latency, 95))}   (target: ≤ 250 ms p50); lines missing: ${idle.missed} of ${idle.e2e.length}`,
  );
  console.log(
    `idle: the request itself, end to end through the proxy: p50 ${f(median(idle.e2e))}, p95 ${f(pct(idle.e2e, 95))} (upstream's answer → client: p50 ${f(median(idle.answer))}) → the line comes ${f(median(idle.latency) - median(idle.answer))} after the client has its answer; ratio line / request ${(median(idle.latency) / median(idle.e2e)).toFixed(0)}×`,
  );
  for (const rate of rates) {
    const ls = loads.filter((l) => l.rate === rate);
    const all = ls.flatMap((l) => l.latency);
    console.log(
      `load ${rate} req/s (achieved ${ls.map((l) => l.achieved.toFixed(0)).join(", ")}): sent ${ls.map((l) => l.sent).join(", ")}, answered 200 ${ls.map((l) => l.ok).join(", ")}, lines ${ls.map((l) => l.lines).join(", ")} → lost ${ls.map((l) => l.lost).join(", ")} (target: 0); {type:"dropped"} counts ${ls.map((l) => l.dropped).join(", ")}`,
    );
    console.log(
      `  answer → line under load: p50 ${f(median(all))}, p95 ${f(pct(all, 95))}, max ${f(Math.max(...all))}; the requests end to end: p50 ${f(median(ls.map((l) => l.e2eP50)))}, p95 ${f(median(ls.map((l) => l.e2eP95)))}`,
    );
    for (const l of ls) if (l.failed) console.log(`  a round had ${l.failed} failed requests: ${JSON.stringify(l.statuses)}`);
  }
  if (other) console.log(`(${other} other lines: task events)`);
} finally {
  watchProc?.kill();
  p.stop();
  upstreamProc.kill();
}
