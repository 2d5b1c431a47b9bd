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
import type { Database } from "bun:sqlite";
import type { Server } from "bun";
import type { Config } from "../../config";
import type { Resolved } from "../../credentials";
import { connect } from "../../store";
import * as Log from "../../util/log";
import { pathOf } from "../../util/url";
import { buffers, Recorder } from "../audit";
import { type Grant, Targets } from "../identity";
import { Gate, Pass, ProxyServer, tooMany, under } from "../listen";
import { MCP_PATH, serveMcp } from "../mcp-bridge";
import { Health, Limits } from "../meters";
import { Chain, type Spec as PluginSpec } from "../plugins";
import { type Context, CURSOR_PREFIX, Fallbacks, handle, handleCursor, type Sessions } from "../request";
import type { Ask, Call, FromThread, Init, Listening, Stats, ToThread } from "./messages";

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
const recorder = new Recorder(
  (batch) => self.postMessage({ type: "audit", batch } satisfies FromThread, buffers(batch)),
  (tally) => post({ type: "refused", tally }),
);
const bridge = { ask, recorder, log };

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
    ? serveMcp(bridge, req, server, pass)
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
  db = connect(m.dbPath);
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
