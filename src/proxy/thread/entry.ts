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
import { Targets, type Grant } from "../identity";
import { Limits } from "../meters";
import { Health } from "../meters";
import { under } from "../listen";
import { MCP_NO_TOKEN, MCP_PATH } from "../mcp-bridge";
import { Recorder, auditRow, buffers } from "../audit";
import { CURSOR_PREFIX, Fallbacks, handle, handleCursor, type Context, type Sessions } from "../request";
import { Gate, Pass, tooMany, dropBody, readAtMost } from "../listen";
import { Chain, type Spec as PluginSpec } from "../plugins";
import type { Ask, Call, FromThread, Init, Listening, McpAdmit, McpAnswer, McpWho, Stats, ToThread } from "./messages";

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
 * MCP callers (address and token) the main thread admitted in the last ADMITTED_MS: a turn's
 * calls come in bursts, and the hop costs ~0.1 ms a call. Only the body's reading (≤ 1 MiB)
 * rests on it; a token revoked meanwhile is refused by the main thread before any tool runs.
 */
const admitted = new Map<string, { who: McpWho; until: number }>();
const ADMITTED_MS = 5000;
const MAX_ADMITTED = 1024;

const rpcError = (status: number, code: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status, headers: { "cache-control": "no-store" } });

/**
 * lazy's MCP route, on the listener task containers reach: the request goes to the main thread
 * (the tools work on the store there) and is audited here like every other request, attributed
 * by its token. The caller is checked before a byte of the body is read — its token and the
 * address it comes from, asked of the main thread, which owns the tokens and their pins — and
 * the body is counted as it arrives and cut at MAX_MCP_BODY, whatever its framing (gate.ts). A
 * refused body is read on and thrown away while the answer goes out (gate.ts `discard`).
 */
async function mcp(req: Request, server: Server<undefined>, pass: Pass): Promise<Response> {
  const started = performance.now();
  const at = Date.now();
  const head = {
    at,
    taskId: null as string | null,
    taskRef: null as string | null,
    role: null as string | null,
    profile: null,
    credential: null,
    upstream: "lazy:mcp",
    method: req.method,
    path: MCP_PATH,
  };
  const refuse = (res: Response, note: string): Response => {
    recorder.record(auditRow(head, performance.now() - started, { status: res.status, note }));
    log.repeated(
      "warn",
      `${res.status} mcp ${note}`,
      `${res.status} ${req.method} ${MCP_PATH} ${note}${head.taskRef ? ` (task ${head.taskRef})` : ""}`,
    );
    return res;
  };
  const auth = req.headers.get("authorization");
  const token = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, "").trim() : "";
  const from = token ? (server.requestIP(req)?.address ?? "unknown").replace(/^::ffff:/, "") : "";
  // No token: refused here, so a flood of them costs the main thread nothing. A caller admitted
  // lately skips the hop (the main thread checks it again before any tool runs).
  const key = `${from} ${token}`;
  const recent = token ? admitted.get(key) : undefined;
  const fresh = recent !== undefined && recent.until > started;
  const admit: McpAdmit = fresh
    ? { ok: true, who: recent.who }
    : token
      ? await ask<McpAdmit>({ op: "mcp-admit", token, from })
      : { ok: false, ...MCP_NO_TOKEN };
  if (admit.ok && !fresh) {
    if (admitted.size >= MAX_ADMITTED) admitted.clear();
    admitted.set(key, { who: admit.who, until: started + ADMITTED_MS });
  } else if (!admit.ok) admitted.delete(key);
  if (!admit.ok) {
    // Unknown to lazy: the row names no task or role (lazy cannot vouch for who sent it).
    dropBody(req, pass);
    return refuse(rpcError(401, -32001, admit.message), admit.note);
  }
  head.taskId = admit.who.taskId;
  head.taskRef = admit.who.taskRef;
  head.role = admit.who.role;
  let body: string | null = null;
  if (req.method !== "GET" && req.method !== "HEAD" && req.method !== "DELETE") {
    const declared = req.headers.get("content-length");
    const over = () => rpcError(413, -32600, `An MCP request body is at most ${MAX_MCP_BODY} bytes.`);
    if (declared !== null && Number(declared) > MAX_MCP_BODY) {
      dropBody(req, pass);
      return refuse(over(), `MCP body of ${Number(declared)} bytes over ${MAX_MCP_BODY}`);
    }
    const read = await readAtMost(req, MAX_MCP_BODY, pass);
    if (read === "over") return refuse(over(), `chunked MCP body passed ${MAX_MCP_BODY} bytes`);
    if (typeof read === "string") return refuse(new Response(null, { status: 499 }), read);
    body = new TextDecoder().decode(read);
  }
  const a = await ask<McpAnswer>({ op: "mcp", method: req.method, headers: [...req.headers], body, from });
  head.taskId = a.who?.taskId ?? null;
  head.taskRef = a.who?.taskRef ?? null;
  head.role = a.who?.role ?? null;
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
    ? mcp(req, server, pass)
    : path.startsWith(CURSOR_PREFIX)
      ? handleCursor(ctx!, sessions, req, server, pass)
      : handle(ctx!, req, server, pass);
  return p.then(
    (res) => {
      // A relayed stream releases its pass when it ends (request/answer.ts, request/cursor.ts).
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
let fallbacks: Fallbacks;
let credentials = new Map<string, Resolved>();
let grants = new Map<string, Grant>();
let stopped = new Map<string, string>();
let live = new Set<string>();
let apiRoots: string[] = [];
/** Loaded here, in each thread (a function cannot be posted); null when none is configured. */
let plugins: Chain | null = null;
const usePlugins = (specs: PluginSpec[]) => {
  plugins = specs.length ? new Chain(specs) : null;
};

function init(m: Init): void {
  Log.configure(m.log);
  config = m.config;
  targets = Targets.build(config);
  fallbacks = Fallbacks.build(config);
  credentials = new Map(Object.entries(m.credentials));
  grants = new Map(m.grants.map((g) => [g.token, g]));
  stopped = new Map(Object.entries(m.stopped));
  live = new Set(m.live);
  apiRoots = m.apiRoots;
  usePlugins(m.plugins);
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
    fallbacks: () => fallbacks,
    plugins: () => plugins,
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
      fallbacks = Fallbacks.build(m.config);
      return;
    case "plugins":
      return usePlugins(m.plugins);
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
