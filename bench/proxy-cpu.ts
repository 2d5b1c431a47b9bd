/**
 * CPU microseconds per request of the proxy's request path, against a naive Bun.serve + fetch
 * pass-through, in one run. CPU time per request is steadier than req/s on a shared 2-core
 * machine, and it says where the cost is: run with NOAUDIT=1 or NOLIMITS=1 to see the audit
 * trail's and the usage readings' share.
 * Run: bun bench/proxy-cpu.ts            (needs wrk; loopback only)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { handle, type Context } from "../src/proxy/forward";
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
    const lazy = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (req, server) => handle(ctx, req, server) });
    const naive = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: async (req) => {
        const h = new Headers(req.headers);
        h.delete("host");
        const r = await fetch(`http://127.0.0.1:${upPort}${new URL(req.url).pathname}`, { method: req.method, headers: h, body: await req.arrayBuffer(), decompress: false } as RequestInit);
        return new Response(await r.bytes(), { status: r.status, headers: r.headers });
      },
    });
    const lua = join(dir, "post.lua");
    writeFileSync(lua, `wrk.method = "POST"\nwrk.body = "{}"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${g.token}"\n`);
    const measure = async (port: number) => {
      const before = process.cpuUsage();
      const w = Bun.spawn(["wrk", "-t2", "-c50", "-d4s", "-s", lua, `http://127.0.0.1:${port}/v1/messages`], { stdout: "pipe" });
      const out = await new Response(w.stdout).text();
      const cpu = process.cpuUsage(before);
      const n = Number(out.match(/(\d+) requests in/)?.[1] ?? 0);
      if (/Non-2xx/.test(out)) throw new Error(out);
      return { us: (cpu.user + cpu.system) / n, rps: Number(out.match(/Requests\/sec:\s+([\d.]+)/)?.[1]) };
    };
    await measure(naive.port!);
    await measure(lazy.port!);
    const rows: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await measure(naive.port!);
      const b = await measure(lazy.port!);
      rows.push(`naive ${a.us.toFixed(0)} µs/req (${a.rps.toFixed(0)} req/s)   lazy ${b.us.toFixed(0)} µs/req (${b.rps.toFixed(0)} req/s)   ratio ${(b.us / a.us).toFixed(2)}×`);
    }
    console.log(`proxy CPU per request, 50 connections${process.env.NOAUDIT ? ", audit off" : ""}${process.env.NOLIMITS ? ", readings off" : ""}, ${new Date().toISOString()}`);
    for (const r of rows) console.log(r);
    lazy.stop(true);
    naive.stop(true);
  } finally {
    up.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
