/**
 * CPU microseconds per request of the proxy's request path, in one process, layer by layer, in
 * one run: what Bun.serve costs before lazy does anything, and what each layer adds on top.
 *   answer  Bun.serve reading the request body and answering from memory
 *   socket  + a bare round trip to the upstream on Bun.connect (no parsing, no headers)
 *   client  + lazy's HTTP/1.1 client (src/proxy/http1.ts, exchange.ts): framing, headers, deadlines, abort
 *   lazy    the whole request path (src/proxy/forward.ts), audit trail included
 *   naive   a Bun.serve + fetch pass-through, for comparison with `client`
 * CPU time per request is steadier than req/s on a shared 2-core machine. The variants take
 * turns, round after round, each round starting one further on, and each figure is the median. NOAUDIT=1 or NOLIMITS=1 switch off
 * the audit trail or the usage readings, to see their share.
 * Run: bun bench/proxy-cpu.ts [rounds]      (needs wrk; loopback only)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server, Socket } from "bun";
import { handle, type Context } from "../src/proxy/forward";
import * as Upstream from "../src/proxy/upstream";
import { Grants } from "../src/proxy/grants";
import { Targets } from "../src/proxy/targets";
import { Audit, Recorder } from "../src/proxy/audit";
import { Limits } from "../src/proxy/limits";
import { Health } from "../src/proxy/health";
import { open } from "../src/store";
import { Config } from "../src/config";

if (process.argv[2] === "upstream") {
  Bun.serve({ hostname: "127.0.0.1", port: Number(process.argv[3]), fetch: () => new Response('{"id":"msg_1","type":"message","usage":{"input_tokens":1,"output_tokens":2}}', { headers: { "content-type": "application/json" } }) });
} else {
  const upPort = 30000 + Math.floor(Math.random() * 10000);
  const up = Bun.spawn([process.execPath, import.meta.path, "upstream", String(upPort)], { stdout: "ignore", stderr: "inherit" });
  const dir = mkdtempSync(join(tmpdir(), "lazy-bench-cpu-"));
  try {
    await Bun.sleep(500);
    const config = Config.parse({ proxy: { upstreams: { anthropic: `http://127.0.0.1:${upPort}` } } });
    const grants = Grants.open(dir);
    const g = grants.mint({ role: "host", taskId: null, taskRef: null, profile: "claude", envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" });
    const db = open(join(dir, "store.db"));
    const log = { debug() {}, info() {}, warn() {}, error() {} };
    const targets = Targets.build(config);
    const ctx = {
      grants,
      credentials: { get: () => ({ value: "sk-ant-api03-bench", kind: "api-key", source: "file" }) },
      targets: () => targets,
      audit: process.env.NOAUDIT ? { record() {} } : ((a) => new Recorder((rows) => a.write(rows)))(new Audit(db, () => ({ maxRows: 100_000, maxAgeDays: 30 }), log)),
      limits: process.env.NOLIMITS ? { record() {} } : new Limits(db),
      health: new Health(),
      log,
      firstByteTimeoutMs: () => 600_000,
      credentialProblems: new Map(),
    } as unknown as Context;
    const upstreamUrl = `http://127.0.0.1:${upPort}/v1/messages`;
    const ANSWER = await (await fetch(upstreamUrl, { method: "POST", body: "{}" })).bytes();
    const json = { "content-type": "application/json" };
    // The bare round trip: one idle socket per request in flight, a fixed request, the answer's
    // bytes counted off its content-length and nothing else looked at.
    const REQUEST = Buffer.from(`POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:${upPort}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`);
    type Wait = { got: number; need: number; done?: () => void };
    const idle: Socket<Wait>[] = [];
    const onData = (s: Socket<Wait>, d: Buffer) => {
      const w = s.data;
      if (w.need < 0) {
        const end = d.indexOf("\r\n\r\n");
        w.need = end + 4 + Number(/content-length: *(\d+)/i.exec(d.toString("latin1", 0, end))?.[1] ?? 0);
      }
      w.got += d.length;
      if (w.got >= w.need) w.done?.();
    };
    // The upstream closes a connection idle for 10 s (while the other variants take their turn).
    const dropIdle = (s: Socket<Wait>) => {
      const i = idle.indexOf(s);
      if (i !== -1) idle.splice(i, 1);
    };
    const variants: Record<string, (req: Request, server: Server<undefined>) => Response | Promise<Response>> = {
      answer: async (req) => {
        await req.arrayBuffer();
        return new Response(ANSWER, { headers: json });
      },
      socket: async (req) => {
        await req.arrayBuffer();
        const s = idle.pop() ?? (await Bun.connect<Wait>({ hostname: "127.0.0.1", port: upPort, data: { got: 0, need: -1 }, socket: { data: onData, close: dropIdle } }));
        s.data.got = 0;
        s.data.need = -1;
        await new Promise<void>((done) => {
          s.data.done = done;
          s.write(REQUEST);
        });
        idle.push(s);
        return new Response(ANSWER, { headers: json });
      },
      client: async (req) => {
        const body = new Uint8Array(await req.arrayBuffer());
        const res = await Upstream.request({ method: "POST", url: upstreamUrl, headers: "content-type: application/json\r\n", body, signal: () => req.signal, timeoutMs: 60_000, fresh: false });
        return new Response(await res.bytes(), { status: res.status, headers: res.headers });
      },
      lazy: (req, server) => handle(ctx, req, server),
      naive: async (req) => {
        const h = new Headers(req.headers);
        h.delete("host");
        const r = await fetch(`http://127.0.0.1:${upPort}${new URL(req.url).pathname}`, { method: req.method, headers: h, body: await req.arrayBuffer(), decompress: false } as RequestInit);
        return new Response(await r.bytes(), { status: r.status, headers: r.headers });
      },
    };
    const servers = Object.entries(variants).map(([name, handler]) => ({ name, server: Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: handler }) }));
    const lua = join(dir, "post.lua");
    writeFileSync(lua, `wrk.method = "POST"\nwrk.body = "{}"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${g.token}"\n`);
    const measure = async (port: number, seconds: number) => {
      const before = process.cpuUsage();
      const w = Bun.spawn(["wrk", "-t2", "-c50", `-d${seconds}s`, "-s", lua, `http://127.0.0.1:${port}/v1/messages`], { stdout: "pipe" });
      const out = await new Response(w.stdout).text();
      const cpu = process.cpuUsage(before);
      const n = Number(out.match(/(\d+) requests in/)?.[1] ?? 0);
      if (!n || /Non-2xx/.test(out)) throw new Error(out);
      return (cpu.user + cpu.system) / n;
    };
    for (const v of servers) await measure(v.server.port!, 2);
    const taken = new Map<string, number[]>(servers.map((v) => [v.name, []]));
    const rounds = Number(process.argv[2] ?? 5);
    // Each round starts one variant further on: a variant measured right after another one
    // reads ~2 µs higher than the same handler measured later in the round.
    for (let i = 0; i < rounds; i++)
      for (let j = 0; j < servers.length; j++) {
        const v = servers[(i + j) % servers.length]!;
        taken.get(v.name)!.push(await measure(v.server.port!, 3));
      }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`proxy CPU µs per request in one process, 50 connections, median of ${rounds} rounds${process.env.NOAUDIT ? ", audit off" : ""}${process.env.NOLIMITS ? ", readings off" : ""}, ${new Date().toISOString()}`);
    let previous: number | undefined;
    for (const v of servers) {
      const us = median(taken.get(v.name)!);
      const step = v.name === "naive" ? "" : previous === undefined ? "" : ` (+${(us - previous).toFixed(1)})`;
      console.log(`  ${v.name.padEnd(7)} ${us.toFixed(1).padStart(6)} µs${step}`);
      if (v.name !== "naive") previous = us;
    }
    for (const v of servers) v.server.stop(true);
    for (const s of idle) s.end();
  } finally {
    up.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
