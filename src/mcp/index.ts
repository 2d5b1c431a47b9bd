/**
 * lazy's MCP server (the official SDK, streamable HTTP, stateless, JSON answers): the tools
 * agents call, reached where they reach the proxy. Every request carries its token (a bearer
 * header), which decides the caller — a task's agent or a builder session — and the tools it
 * gets. No OAuth discovery is served: a client that found it would ignore the configured
 * header (docs/wire.md, "MCP wiring per harness").
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { Tasks } from "../store";
import { VERSION } from "../version";
import { type BuilderToolDeps, registerBuilderTools } from "./builder-tools";
import { registerTaskTools, type TaskToolDeps } from "./tools";

export { MCP_PATH, type McpToken, type McpTokens } from "../proxy";
export { BOUNDS, MAX_TASKS, MEMORY_PER_TURN, PROGRESS_PER_MINUTE, type WritingTool } from "./bounds";
export { RAISE_MAX_TASKS } from "./builder-tools";

import { MCP_NO_TOKEN, type McpToken, type McpTokens, notLive, pinnedTo, refusedFrom } from "../proxy";

export interface McpDeps extends TaskToolDeps, BuilderToolDeps {
  /** The grant registry's MCP tokens (proxy/identity): their pins and revocations are the registry's. */
  tokens: Pick<McpTokens, "lookup">;
  /** Does the task have a running turn, or one of lazy's own calls about it? Its token works only then. */
  live: (taskId: string) => boolean;
}

const refuse = (status: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code: -32001, message }, id: null }, { status, headers: { "cache-control": "no-store" } });

type Who = { taskId: string | null; taskRef: string | null; role: string };

/**
 * Whether a request on the MCP route may be served, from its bearer token and the address it
 * came from only: the proxy asks this before it reads a byte of the body. A refusal is a 401
 * that says why, and is audited with no task or role (lazy cannot vouch for the caller).
 */
export function admit(
  d: Pick<McpDeps, "tokens" | "db" | "live">,
  token: string,
  from: string,
): { ok: true; who: Who; holder: McpToken } | { ok: false; message: string; note: string } {
  const a = decide(d, token, from);
  const taskId = a.ok ? a.who.taskId : token ? d.tokens.lookup(token)?.taskId : undefined;
  if (taskId) hear(taskId, a.ok ? {} : { refused: a.message });
  return a;
}

/** What lazy's MCP route last did with a task's token: refused it (why), or answered it (the HTTP status; none yet while it works). */
export interface Heard {
  at: number;
  refused?: string;
  status?: number;
}

/**
 * When lazy's MCP route last heard from each task's token, and what came of it: a turn stopped
 * because its harness says lazy's MCP server did not connect tells the person whether the
 * container reached lazy at all (runner/turn-watch.ts). Kept for the newest HEARD tasks, since
 * HEARD_SINCE (this process's start: a daemon restarted mid-turn heard nothing before it).
 */
const heard = new Map<string, Heard>();
const HEARD = 4096;
export const HEARD_SINCE = Date.now();

function hear(taskId: string, what: { refused?: string; status?: number }): void {
  heard.delete(taskId);
  heard.set(taskId, { at: Date.now(), ...what });
  if (heard.size > HEARD) heard.delete(heard.keys().next().value!);
}

/** What lazy's MCP route last did with the task's token, and when (epoch ms); undefined when nothing since HEARD_SINCE. */
export function lastHeard(taskId: string): Heard | undefined {
  return heard.get(taskId);
}

function decide(
  d: Pick<McpDeps, "tokens" | "db" | "live">,
  token: string,
  from: string,
): { ok: true; who: Who; holder: McpToken } | { ok: false; message: string; note: string } {
  if (!token) return { ok: false, ...MCP_NO_TOKEN };
  const holder = d.tokens.lookup(token);
  if (!holder) {
    servers.delete(token);
    return {
      ok: false,
      message: "lazy's MCP route does not know this token: the task's session ended, or it was never lazy's.",
      note: "unknown or revoked MCP token",
    };
  }
  // A task's token lives only while its turn (or a call about it) runs, like its placeholder;
  // and it is pinned with its placeholder, by the same rule (proxy/identity/pin.ts): from its
  // container's address only, or from none while its container is stopped.
  let who: Who = { taskId: null, taskRef: null, role: "builder" };
  if (holder.kind === "task" && holder.taskId) {
    const code = Tasks.codeOf(d.db, holder.taskId);
    who = { taskId: holder.taskId, taskRef: code ?? holder.taskId, role: "agent" };
    if (!d.live(holder.taskId))
      return { ok: false, message: `lazy refused this MCP token: ${notLive({ ...who, role: "agent" })}`, note: "no running turn" };
  }
  // A builder session runs on this machine (lazy build): its token, pinned to no container, is
  // accepted from loopback only, as its placeholder is.
  if (refusedFrom(holder, holder.kind === "builder", from)) {
    const at = pinnedTo(holder)?.join(", ");
    const owner =
      holder.kind === "builder" && !at
        ? `${holder.session ? `builder session ${holder.session}` : "a builder session"} on this machine, usable from this machine only,`
        : `task ${holder.taskId}'s container (${at || "none running now"})`;
    return {
      ok: false,
      message: `lazy's MCP route refused this token: it belongs to ${owner} and was presented from ${from}.`,
      note: `MCP token presented from ${from}, pinned to ${at || (holder.kind === "builder" ? "this machine" : "none")}`,
    };
  }
  return { ok: true, holder, who };
}

/**
 * Answer one MCP request, and say who made it (by its token) and what it called, for the
 * proxy's audit row: `tools/call <name>`, or why it was refused. `from`: the caller's address.
 */
export async function serve(
  d: McpDeps,
  req: Request,
  from: string,
): Promise<{ response: Response; who: Who | null; note: string | null; counted?: boolean }> {
  const auth = req.headers.get("authorization");
  // Read as the proxy's thread reads it before admitting the request (proxy/mcp-bridge/thread.ts).
  const token = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, "").trim() : "";
  const a = admit(d, token, from);
  if (!a.ok) return { response: refuse(401, a.message), who: null, note: a.note };
  // lazy's tools never speak first, so there is no stream to hold open: 405 is the spec's "no
  // SSE stream here". A stream that closed at once (the SDK's stateless answer) had clients
  // open another about every second for the whole turn.
  if (req.method === "GET") {
    if (a.who.taskId) hear(a.who.taskId, { status: 405 });
    return {
      response: Response.json(
        { jsonrpc: "2.0", error: { code: -32000, message: "lazy's MCP server offers no SSE stream: send requests with POST." }, id: null },
        { status: 405, headers: { allow: "POST, DELETE", "cache-control": "no-store" } },
      ),
      who: a.who,
      note: "no SSE stream (GET)",
    };
  }
  let note: string | null = null;
  // The body is read once, here: its method names the audit row, and the SDK is handed it parsed.
  // Not JSON: the SDK gets the text back and refuses it in its own words.
  let parsed: unknown;
  if (req.method === "POST") {
    const text = await req.text();
    try {
      parsed = JSON.parse(text);
    } catch {
      req = new Request(req.url, { method: req.method, headers: req.headers, body: text });
    }
    const body = parsed as { method?: unknown; params?: { name?: unknown } } | null | undefined;
    if (body && typeof body.method === "string")
      note =
        body.method === "tools/call" && typeof body.params?.name === "string"
          ? `tools/call ${shown(body.params.name)}`
          : shown(body.method);
  }
  const { response, bounded } = await handle(d, token, a.holder, req, parsed);
  if (a.who.taskId) hear(a.who.taskId, { status: response.status });
  // One tool call refused by its bound: counted where the bound keeps its count, not audited a row a call.
  return { response, who: a.who, note: bounded ? `${note} (refused by its bound)` : note, counted: bounded && response.status === 200 };
}

/**
 * A method or tool name as the audit row's note shows it (and the spans and exports made from
 * it): the agent chose it, so one that is not a plain name of letters, `_` and `/` (MCP's are:
 * `tools/call`, `logging/setLevel`, `report_progress`) or that says "lazy" (every placeholder and
 * token does, and has `-` or digits) is not shown: a secret put there never reaches the audit.
 */
const shown = (name: string) => (/^[A-Za-z_/]{1,64}$/.test(name) && !/lazy/i.test(name) ? name : "(a name lazy does not show)");

/**
 * One server per token, its tools registered once (building a server with its tools costs
 * ~0.4 ms, more than the rest of a call: bench/README.md "MCP"), reused for that token's
 * requests one at a time, each over a fresh stateless transport. Dropped when its token is no
 * longer known; at most MAX_SERVERS kept, the least recently used going first.
 */
type Entry = { server: McpServer; chain: Promise<unknown> /** the request being answered was refused by a bound */; bounded: boolean };
const servers = new Map<string, Entry>();
const MAX_SERVERS = 256;

function serverFor(d: McpDeps, token: string, holder: McpToken): Entry {
  let entry = servers.get(token);
  if (entry) {
    servers.delete(token); // re-inserted below: the map's order is recency
  } else {
    const server = new McpServer({ name: "lazy", version: VERSION }, { capabilities: { tools: {} } });
    const made: Entry = { server, chain: Promise.resolve(), bounded: false };
    const bounded = () => {
      made.bounded = true;
    };
    if (holder.kind === "task" && holder.taskId) registerTaskTools(server, d, holder.taskId, bounded);
    // A session counts from its token: a new session of the same name (a new token) starts afresh.
    else registerBuilderTools(server, d, { name: holder.session ?? "unnamed", token }, bounded);
    entry = made;
  }
  servers.set(token, entry);
  if (servers.size > MAX_SERVERS) servers.delete(servers.keys().next().value!);
  return entry;
}

/** Answer one admitted MCP request (POST or DELETE on MCP_PATH); `parsedBody`: a POST's body, already read. */
async function handle(
  d: McpDeps,
  token: string,
  holder: McpToken,
  req: Request,
  parsedBody?: unknown,
): Promise<{ response: Response; bounded: boolean }> {
  const entry = serverFor(d, token, holder);
  // The token's requests run one at a time (the chain): the flag is this request's.
  const run = entry.chain.then(async () => {
    entry.bounded = false;
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await entry.server.connect(transport);
    try {
      const response = await transport.handleRequest(req, parsedBody === undefined ? undefined : { parsedBody });
      return { response, bounded: entry.bounded };
    } finally {
      await entry.server.close();
    }
  });
  entry.chain = run.catch(() => {});
  return run;
}
