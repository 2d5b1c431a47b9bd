/**
 * Issue 21's MCP target: a tool call from inside a task container (round trip) ≤ 15 ms p50 and
 * ≤ 3× a plain HTTP GET to the same listener from the same container. The call is `tools/call
 * task_info`: the bench's task has finished its turn, and since issue 26 the tools that write
 * refuse a task with no running turn (and report_progress is bounded to 30 a minute); issue 21
 * timed report_progress.
 * The baseline is `GET /api/tasks`, which the proxy's thread answers itself (404, "Not a route of
 * lazy's proxy"): no upstream, no main thread. Both go over one keep-alive connection, call and
 * GET alternating, timed by a node client inside the task's container (`docker exec`), in rounds;
 * each figure is the median over rounds of that round's percentile.
 * Also timed, to show where the call's time goes: POST /mcp with no token (401) and tools/list.
 * Run: bun run build && bun bench/mcp.ts [rounds] [pairs per round]   (needs Docker, test images)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { containerProject, fmt, pct } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 7);
const pairs = Number(process.argv[3] ?? 200);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

// Runs in the container under node: no dependencies, one agent with one keep-alive socket.
const CLIENT = String.raw`
const http = require("node:http");
const [url, rounds, pairs] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
const token = process.env.LAZY_MCP_TOKEN;
const u = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const sockets = new Set();
function once(method, path, headers, body) {
  return new Promise((ok, fail) => {
    const t = process.hrtime.bigint();
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers, agent }, (res) => {
      sockets.add(res.socket);
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => ok({ ms: Number(process.hrtime.bigint() - t) / 1e6, status: res.statusCode, body: Buffer.concat(parts).toString() }));
    });
    req.on("error", fail);
    req.end(body);
  });
}
let id = 0;
const call = () => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "task_info", arguments: {} } });
  return once("POST", u.pathname, { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer " + token, "content-length": Buffer.byteLength(body) }, body);
};
const get = () => once("GET", "/api/tasks", {});
// Where the call's time goes: no token (the hop to the main thread and a refusal), tools/list
// (+ the SDK's server and transport made for the request), against tools/call (+ the event).
const bare = () => once("POST", u.pathname, { "content-type": "application/json", accept: "application/json, text/event-stream", "content-length": 2 }, "{}");
const list = () => {
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/list", params: {} });
  return once("POST", u.pathname, { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer " + token, "content-length": Buffer.byteLength(body) }, body);
};
(async () => {
  const c = await call(), g = await get();
  if (c.status !== 200 || !c.body.includes("mcp-bench")) throw new Error("tools/call task_info answered " + c.status + ": " + c.body.slice(0, 300));
  if (g.status !== 404) throw new Error("GET /api/tasks answered " + g.status + ": " + g.body.slice(0, 300));
  const b = await bare();
  if (b.status !== 401) throw new Error("POST /mcp without a token answered " + b.status + ": " + b.body.slice(0, 300));
  for (let i = 0; i < 50; i++) { await call(); await get(); await bare(); await list(); }
  for (let r = 0; r < rounds; r++) {
    const out = { call: [], get: [], bare: [], list: [] };
    const kinds = [["call", call], ["get", get], ["bare", bare], ["list", list]];
    for (let i = 0; i < pairs; i++) {
      // The order rotates, so no kind always follows the same other.
      for (let k = 0; k < kinds.length; k++) { const [name, f] = kinds[(i + k) % kinds.length]; out[name].push((await f()).ms); }
    }
    process.stdout.write(JSON.stringify(out) + "\n");
  }
  process.stderr.write("sockets used: " + sockets.size + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
`;

const upstream = await Mock.anthropic();
upstream.reply = { text: "ok." };
const { home, env, sh, dispose } = containerProject(BIN, "mcp", BASE, upstream.url);

try {
  // One task, one turn: its container stays up (idle supervisor) and its MCP token exists.
  sh([BIN, "task", "add", "bench the MCP route", "--code", "mcp-bench"]);
  sh([BIN, "start", "mcp-bench"]);
  let status = "running";
  for (const end = Date.now() + 300_000; Date.now() < end && (status === "running" || status === "queued"); await Bun.sleep(200))
    status = JSON.parse(sh([BIN, "task", "show", "mcp-bench", "--json"])).task.status;
  if (status !== "done") throw new Error(`the bench's task ended ${status}, not done: lazy logs mcp-bench says why`);
  const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
  const taskId = JSON.parse(sh([BIN, "task", "show", "mcp-bench", "--json"])).task.id as string;
  const container = `lazy-${state.split("/").at(-1)}-${taskId}`;
  const mcpJson = JSON.parse(sh(["docker", "exec", container, "cat", "/lazy/harness/mcp.json"]));
  const url: string = Object.values(mcpJson.mcpServers as Record<string, { url: string }>)[0]!.url;
  const token: string = JSON.parse(readFileSync(join(state, "proxy-tokens.json"), "utf8")).mcpTokens.find(
    (t: any) => t.taskId === taskId,
  ).token;

  // The token goes by environment (docker exec -e NAME takes the value from ours), never argv.
  const r = Bun.spawnSync(["docker", "exec", "-e", "LAZY_MCP_TOKEN", container, "node", "-e", CLIENT, url, String(rounds), String(pairs)], {
    env: { ...env, LAZY_MCP_TOKEN: token },
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`the client in the container failed: ${r.stderr}`);
  const per = r.stdout
    .toString()
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<"call" | "get" | "bare" | "list", number[]>);
  const med = (xs: number[]) => pct(xs, 50);
  const p = (k: "call" | "get" | "bare" | "list", q: number) => med(per.map((x) => pct(x[k], q)));
  const ratios = per.map((x) => pct(x.call, 50) / pct(x.get, 50));
  console.log(`mcp bench: ${rounds} rounds × ${pairs} pairs, ${url}, ${new Date().toISOString()} (${r.stderr.toString().trim()})`);
  console.log(`tools/call task_info         p50 ${fmt(p("call", 50))}   p95 ${fmt(p("call", 95))}`);
  console.log(`GET /api/tasks (404, proxy)  p50 ${fmt(p("get", 50))}   p95 ${fmt(p("get", 95))}`);
  console.log(`  POST /mcp, no token (401)  p50 ${fmt(p("bare", 50))}   p95 ${fmt(p("bare", 95))}   (answered on the proxy thread)`);
  console.log(`  tools/list                 p50 ${fmt(p("list", 50))}   p95 ${fmt(p("list", 95))}   (+ the SDK server made per request)`);
  console.log(
    `ratio (p50): ${med(ratios).toFixed(2)}×   per round ${ratios.map((x) => x.toFixed(2)).join(" ")}   targets: ≤ 15 ms p50 and ≤ 3×`,
  );
} finally {
  dispose();
  await upstream.close();
}
