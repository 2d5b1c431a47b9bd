/**
 * CPU microseconds per request of the proxy's request path, in one process, layer by layer, in
 * one run: what Bun.serve costs before lazy does anything, and what each layer adds on top.
 *   answer  Bun.serve reading the request body and answering from memory
 *   socket  + a bare round trip to the upstream on Bun.connect (no parsing, no headers)
 *   client  + lazy's HTTP/1.1 client (src/proxy/upstream/http1.ts, exchange.ts): framing, headers, deadlines, abort
 *   lazy    the whole request path (src/proxy/request/forward.ts), audit trail included
 *   naive   a Bun.serve + fetch pass-through, for comparison with `client`
 *   listen  `client` with a front on Bun.listen (a minimal HTTP/1.1 parser, content-length
 *           bodies only) instead of Bun.serve: what Bun.serve's request and response objects
 *           cost in lazy's place. A measurement, not a server lazy could ship.
 * CPU time per request is steadier than req/s on a shared 2-core machine. The variants take
 * turns, round after round, each round starting one further on, and each figure is the
 * median. NOAUDIT=1 or NOLIMITS=1 switch off the audit trail or the usage readings, to see
 * their share.
 * Run: bun bench/proxy-cpu.ts [rounds]      (needs wrk; loopback only)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server, Socket } from "bun";
import { Config } from "../src/config";
import { Audit, Recorder } from "../src/proxy/audit";
import { Grants, Targets } from "../src/proxy/identity";
import { Gate, type Pass } from "../src/proxy/listen/gate";
import { Health } from "../src/proxy/meters/health";
import { Limits } from "../src/proxy/meters/limits";
import { type Context, handle } from "../src/proxy/request";
import * as Upstream from "../src/proxy/upstream";
import { open } from "../src/store";

if (process.argv[2] === "upstream") {
  Bun.serve({
    hostname: "127.0.0.1",
    port: Number(process.argv[3]),
    fetch: () =>
      new Response('{"id":"msg_1","type":"message","usage":{"input_tokens":1,"output_tokens":2}}', {
        headers: { "content-type": "application/json" },
      }),
  });
} else {
  const upPort = 30000 + Math.floor(Math.random() * 10000);
  const up = Bun.spawn([process.execPath, import.meta.path, "upstream", String(upPort)], { stdout: "ignore", stderr: "inherit" });
  const dir = mkdtempSync(join(tmpdir(), "lazy-bench-cpu-"));
  try {
    await Bun.sleep(500);
    const config = Config.parse({ proxy: { upstreams: { anthropic: `http://127.0.0.1:${upPort}` } } });
    const grants = Grants.open(dir);
    const g = grants.mint({
      role: "host",
      taskId: null,
      taskRef: null,
      profile: "claude",
      envVar: "ANTHROPIC_API_KEY",
      shape: "anthropic-api-key",
    });
    const db = open(join(dir, "store.db"));
    const log = { debug() {}, info() {}, warn() {}, error() {}, repeated() {} };
    const targets = Targets.build(config);
    const ctx = {
      grants,
      // The grant's process lives through the bench (a grant redeems only while it does).
      live: () => true,
      credentials: { get: () => ({ value: "sk-ant-api03-bench", kind: "api-key", source: "file" }) },
      targets: () => targets,
      audit: process.env.NOAUDIT
        ? { record() {} }
        : ((a) =>
            new Recorder(
              (rows) => a.write(rows),
              (tally) => a.refused(tally),
            ))(new Audit(db, () => ({ maxRows: 100_000, maxAgeDays: 30 }), log)),
      limits: process.env.NOLIMITS ? { record() {} } : new Limits(db),
      health: new Health(),
      log,
      firstByteTimeoutMs: () => 600_000,
      credentialProblems: new Map(),
    } as unknown as Context;
    const gate = new Gate();
    const upstreamUrl = `http://127.0.0.1:${upPort}/v1/messages`;
    const ANSWER = await (await fetch(upstreamUrl, { method: "POST", body: "{}" })).bytes();
    const json = { "content-type": "application/json" };
    // The bare round trip: one idle socket per request in flight, a fixed request, the answer's
    // bytes counted off its content-length and nothing else looked at.
    const REQUEST = Buffer.from(
      `POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:${upPort}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
    );
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
        const s =
          idle.pop() ??
          (await Bun.connect<Wait>({
            hostname: "127.0.0.1",
            port: upPort,
            data: { got: 0, need: -1 },
            socket: { data: onData, close: dropIdle },
          }));
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
        const res = await Upstream.request({
          method: "POST",
          url: upstreamUrl,
          headers: "content-type: application/json\r\n",
          body,
          signal: () => req.signal,
          timeoutMs: 60_000,
          fresh: false,
        });
        return new Response(await res.bytes(), { status: res.status, headers: res.headers });
      },
      // The request path as the proxy thread runs it: admitted by the gate, released when done.
      lazy: (req, server) => {
        const pass = gate.admit(req, server) as Pass;
        return handle(ctx, req, server, pass).then((res) => {
          if (!pass.held) pass.release();
          return res;
        });
      },
      naive: async (req) => {
        const h = new Headers(req.headers);
        h.delete("host");
        const r = await fetch(`http://127.0.0.1:${upPort}${new URL(req.url).pathname}`, {
          method: req.method,
          headers: h,
          body: await req.arrayBuffer(),
          decompress: false,
        } as RequestInit);
        return new Response(await r.bytes(), { status: r.status, headers: r.headers });
      },
    };
    // VARIANTS=lazy,client measures only those (a profile of one path: bun --cpu-prof).
    const only = process.env.VARIANTS?.split(",");
    const servers: { name: string; port: number; stop: () => void }[] = Object.entries(variants)
      .filter(([name]) => !only || only.includes(name))
      .map(([name, handler]) => {
        const server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: handler });
        return { name, port: server.port!, stop: () => server.stop(true) };
      });
    const front = listenFront(upstreamUrl);
    if (!only || only.includes("listen")) servers.push({ name: "listen", port: front.port, stop: () => front.stop(true) });
    const lua = join(dir, "post.lua");
    writeFileSync(
      lua,
      `wrk.method = "POST"\nwrk.body = "{}"\nwrk.headers["content-type"] = "application/json"\nwrk.headers["x-api-key"] = "${g.token}"\n`,
    );
    const measure = async (port: number, seconds: number) => {
      const before = process.cpuUsage();
      const w = Bun.spawn(["wrk", "-t2", "-c50", `-d${seconds}s`, "-s", lua, `http://127.0.0.1:${port}/v1/messages`], { stdout: "pipe" });
      const out = await new Response(w.stdout).text();
      const cpu = process.cpuUsage(before);
      const n = Number(out.match(/(\d+) requests in/)?.[1] ?? 0);
      if (!n || /Non-2xx/.test(out)) throw new Error(out);
      return (cpu.user + cpu.system) / n;
    };
    for (const v of servers) await measure(v.port, 2);
    const taken = new Map<string, number[]>(servers.map((v) => [v.name, []]));
    const rounds = Number(process.argv[2] ?? 5);
    // Each round starts one variant further on: a variant measured right after another one
    // reads ~2 µs higher than the same handler measured later in the round.
    for (let i = 0; i < rounds; i++)
      for (let j = 0; j < servers.length; j++) {
        const v = servers[(i + j) % servers.length]!;
        taken.get(v.name)!.push(await measure(v.port, 3));
      }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(
      `proxy CPU µs per request in one process, 50 connections, median of ${rounds} rounds${process.env.NOAUDIT ? ", audit off" : ""}${process.env.NOLIMITS ? ", readings off" : ""}, ${new Date().toISOString()}`,
    );
    let previous: number | undefined;
    for (const v of servers) {
      const us = median(taken.get(v.name)!);
      const aside = v.name === "naive" || v.name === "listen";
      const step = aside || previous === undefined ? "" : ` (+${(us - previous).toFixed(1)})`;
      console.log(`  ${v.name.padEnd(7)} ${us.toFixed(1).padStart(6)} µs${step}`);
      if (!aside) previous = us;
    }
    for (const v of servers) v.stop();
    for (const s of idle) s.end();
  } finally {
    up.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0); // sockets the variants kept would hold the process (and a --cpu-prof is written at exit)
}

/**
 * The `client` layer behind a front on Bun.listen: requests parsed by hand (content-length
 * bodies, no pipelining, no chunked uploads), lazy's client upstream, the answer written back.
 */
function listenFront(upstreamUrl: string) {
  const never = new AbortController().signal;
  type Front = { buf: Buffer | undefined };
  return Bun.listen<Front>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { buf: undefined };
      },
      data(s, d) {
        let b = s.data.buf ? Buffer.concat([s.data.buf, d]) : d;
        for (;;) {
          const end = b.indexOf("\r\n\r\n");
          if (end < 0) break;
          const head = b.toString("latin1", 0, end);
          let lines = "";
          let length = 0;
          for (let at = head.indexOf("\r\n") + 2; at > 1 && at < head.length; ) {
            let eol = head.indexOf("\r\n", at);
            if (eol === -1) eol = head.length;
            const colon = head.indexOf(":", at);
            if (colon > at && colon < eol) {
              const name = head.slice(at, colon).toLowerCase();
              const value = head.slice(head.charCodeAt(colon + 1) === 32 ? colon + 2 : colon + 1, eol);
              if (name === "content-length") length = Number(value);
              else if (name !== "host") lines += `${name}: ${value}\r\n`;
            }
            at = eol + 2;
          }
          if (b.length < end + 4 + length) break;
          const body = new Uint8Array(b.subarray(end + 4, end + 4 + length));
          b = b.subarray(end + 4 + length);
          void Upstream.request({
            method: head.slice(0, head.indexOf(" ")),
            url: upstreamUrl,
            headers: lines,
            body,
            signal: () => never,
            timeoutMs: 60_000,
            fresh: false,
          }).then(async (res) => {
            const bytes = await res.bytes();
            let out = `HTTP/1.1 ${res.status} ${res.statusText}\r\n`;
            for (const [k, v] of res.headers) out += `${k}: ${v}\r\n`;
            out += `content-length: ${bytes.length}\r\n\r\n`;
            const answer = Buffer.allocUnsafe(Buffer.byteLength(out, "latin1") + bytes.length);
            answer.set(bytes, answer.write(out, 0, "latin1"));
            s.write(answer);
          });
        }
        s.data.buf = b.length ? b : undefined;
      },
    },
  });
}
