/**
 * The proxy's request path, on a thread of its own. Next to the daemon's main thread (its
 * bigger heap, the API, the runner) the same code did 25-40 % fewer requests a second
 * (bench/README.md). Here it has a small heap and an event loop that does nothing else.
 *
 * The main thread stays the owner of everything durable: it mints and revokes grants, holds the
 * credential store and writes the audit trail. It posts this thread what the request path
 * reads (config, credential values, the grant table) whenever they change, and waits for this
 * thread's answer to a `sync` before it hands out a placeholder, so the first request that
 * presents it finds it here. Audit rows come back in batches; usage readings, provider health
 * and rejected OAuth tokens are kept here and read by a `stats` call. On Linux there are two
 * such threads sharing the port (shared-port.ts); what one learns that the other needs at once
 * (Cursor's session tokens) is kept on the main thread and asked for.
 */
import { Database } from "bun:sqlite";
import type { Server } from "bun";
import type { Config } from "../../config";
import type { Resolved } from "../../credentials";
import * as Log from "../../util/log";
import { pathOf } from "../../util/url";
import { ProxyServer } from "../listen";
import type { Grant } from "../grants";
import { Targets } from "../targets";
import { Limits } from "../meters";
import { Health } from "../meters";
import { MCP_PATH, under } from "../listen";
import { Recorder, auditRow, buffers } from "../audit";
import { handle, type Context } from "../forward";
import { Gate, Pass, tooMany } from "../listen";
import { handleCursor, PREFIX as CURSOR_PREFIX, type Sessions } from "../cursor";
import type { Ask, Call, FromThread, Init, Listening, McpAnswer, Stats, ToThread } from "./messages";

declare const self: Worker;

let ctx: Context | undefined;
let config: Config;
let db: Database;
let limits: Limits;
const asked = new Map<number, (v: unknown) => void>();
let lastAsk = 0;
function ask<T>(a: Ask): Promise<T> {
  const id = ++lastAsk;
  return new Promise<T>((resolve) => {
    asked.set(id, resolve as (v: unknown) => void);
    post({ type: "ask", id, ask: a });
  });
}
/**
 * Cursor session placeholders, kept on the main thread: the agent's next call may arrive on
 * another proxy thread, and a swap is recorded there before its answer goes out.
 */
const sessions: Sessions = {
  swapOut: (real, grant) => ask<string>({ op: "swap", real, grant }),
  pairs: (grantToken) => ask<[string, string][]>({ op: "pairs", grantToken }),
};
const servers = new Map<string, ProxyServer>();
const log = Log.create("proxy");
const post = (m: FromThread) => self.postMessage(m);
const recorder = new Recorder((batch) => self.postMessage({ type: "audit", batch } satisfies FromThread, buffers(batch)));

/** The largest MCP request body lazy reads (tool arguments are short). */
const MAX_MCP_BODY = 1024 * 1024;

/**
 * lazy's MCP route, on the listener task containers reach: the request goes to the main thread
 * (the tools work on the store there) and is audited here like every other request, attributed
 * by its token.
 */
async function mcp(req: Request): Promise<Response> {
  const started = performance.now();
  const at = Date.now();
  let body: string | null = null;
  if (req.method !== "GET" && req.method !== "HEAD" && req.method !== "DELETE") {
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > MAX_MCP_BODY)
      return Response.json(
        { jsonrpc: "2.0", error: { code: -32600, message: `An MCP request body is at most ${MAX_MCP_BODY} bytes.` }, id: null },
        { status: 413 },
      );
    body = new TextDecoder().decode(bytes);
  }
  const a = await ask<McpAnswer>({ op: "mcp", method: req.method, headers: [...req.headers], body });
  const head = {
    at,
    taskId: a.who?.taskId ?? null,
    taskRef: a.who?.taskRef ?? null,
    role: a.who?.role ?? null,
    profile: null,
    credential: null,
    upstream: "lazy:mcp",
    method: req.method,
    path: MCP_PATH,
  };
  recorder.record(
    auditRow(head, performance.now() - started, { status: a.status, bytesIn: body?.length ?? 0, bytesOut: a.body.length, note: a.note }),
  );
  return new Response(a.body, { status: a.status, headers: a.headers });
}

/** What a container can make this thread hold: requests in flight, bodies, time (gate.ts). */
const gate = new Gate();

function route(req: Request, server: Server<undefined>): Response | Promise<Response> {
  const pass = gate.admit(req, server);
  if (!(pass instanceof Pass)) {
    log.repeated("warn", "over the cap", `429: ${pass.refused}; the connection is closed`);
    return tooMany(pass.refused);
  }
  const path = pathOf(req.url);
  if (under(path, apiRoots)) {
    pass.release();
    return Response.json(
      {
        type: "error",
        error: { type: "not_found_error", message: "Not a route of lazy's proxy: the daemon's API is not served on this listener." },
      },
      { status: 404 },
    );
  }
  const p = under(path, [MCP_PATH])
    ? mcp(req)
    : path.startsWith(CURSOR_PREFIX)
      ? handleCursor(ctx!, sessions, req, server, pass)
      : handle(ctx!, req, server, pass);
  return p.then(
    (res) => {
      // A relayed stream releases its pass when it ends (forward.ts, cursor.ts).
      if (!pass.held) pass.release();
      return res;
    },
    (e: unknown) => {
      pass.release();
      const msg = `lazy's proxy failed: ${(e as Error)?.message ?? String(e)}`;
      // Whatever a container can trigger per request must not write a stack per request.
      log.repeated("error", msg, `${msg}\n${(e as Error)?.stack ?? ""}`);
      return Response.json(
        { type: "error", error: { type: "api_error", message: msg } },
        { status: 500, headers: { "x-should-retry": "false" } },
      );
    },
  );
}

// What the request path reads, replaced whole whenever the main thread posts a change.
let targets: Targets;
let credentials = new Map<string, Resolved>();
let grants = new Map<string, Grant>();
let stopped = new Map<string, string>();
let live = new Set<string>();
let apiRoots: string[] = [];

function init(m: Init): void {
  Log.configure(m.log);
  config = m.config;
  targets = Targets.build(config);
  credentials = new Map(Object.entries(m.credentials));
  grants = new Map(m.grants.map((g) => [g.token, g]));
  stopped = new Map(Object.entries(m.stopped));
  live = new Set(m.live);
  apiRoots = m.apiRoots;
  db = new Database(m.dbPath);
  db.exec("PRAGMA busy_timeout = 5000");
  limits = new Limits(db);
  ctx = {
    grants: { lookup: (token) => grants.get(token) },
    stopped: (taskId) => stopped.get(taskId) ?? stopped.get("*"),
    live: (taskId) => live.has(taskId),
    credentials: { get: (name) => credentials.get(name) },
    targets: () => targets,
    audit: recorder,
    limits,
    health: new Health(),
    log,
    firstByteTimeoutMs: () => config.proxy.first_byte_timeout_s * 1000,
    credentialProblems: new Map(),
  };
}

async function call(c: Call): Promise<unknown> {
  switch (c.op) {
    case "listen": {
      const have = servers.get(c.host);
      if (have?.address) return { address: have.address } satisfies Listening;
      const s = new ProxyServer(log, route);
      await s.start(c.host, c.port, c.shared, c.exact);
      if (s.address) servers.set(c.host, s);
      return { address: s.address, error: s.error } satisfies Listening;
    }
    case "unlisten":
      servers.get(c.host)?.stop();
      servers.delete(c.host);
      return null;
    case "sync":
      recorder.flush();
      return null;
    case "stats":
      return {
        limits: limits.list(),
        health: ctx!.health.summary(),
        problems: Object.fromEntries(ctx!.credentialProblems),
      } satisfies Stats;
    case "clear-problem":
      ctx!.credentialProblems.delete(c.name);
      return null;
    case "stop":
      for (const s of servers.values()) s.stop();
      servers.clear();
      recorder.flush();
      limits.stop();
      db.close();
      return null;
  }
}

self.onmessage = (e: MessageEvent<ToThread>) => {
  const m = e.data;
  switch (m.type) {
    case "init":
      return init(m.init);
    case "config":
      config = m.config;
      targets = Targets.build(m.config);
      return;
    case "credentials":
      credentials = new Map(Object.entries(m.credentials));
      return;
    case "grants":
      grants = new Map(m.grants.map((g) => [g.token, g]));
      return;
    case "stopped":
      stopped = new Map(Object.entries(m.stopped));
      return;
    case "live":
      live = new Set(m.live);
      return;
    case "api-roots":
      apiRoots = m.roots;
      return;
    case "answer":
      asked.get(m.id)?.(m.value);
      asked.delete(m.id);
      return;
    case "call":
      call(m.call).then(
        (value) => post({ type: "reply", id: m.id, value }),
        (err: unknown) => post({ type: "reply", id: m.id, error: (err as Error)?.message ?? String(err) }),
      );
  }
};
