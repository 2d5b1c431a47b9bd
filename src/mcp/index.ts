/**
 * lazy's MCP server (the official SDK, streamable HTTP, stateless, JSON answers): the tools
 * agents call, reached where they reach the proxy. Every request carries its token (a bearer
 * header), which decides the caller — a task's agent or a builder session — and the tools it
 * gets. No OAuth discovery is served: a client that found it would ignore the configured
 * header (WIRE.md §10.4).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { VERSION } from "../version";
import type { McpTokens } from "./tokens";
import { registerTaskTools, type TaskToolDeps } from "./tools";
import { registerBuilderTools, type BuilderToolDeps } from "./builder-tools";

export { McpTokens, FILE_NAME as MCP_TOKENS_FILE, type Holder } from "./tokens";
import type { Holder } from "./tokens";

export { MCP_PATH } from "../proxy";

export interface McpDeps extends TaskToolDeps, BuilderToolDeps {
  tokens: Pick<McpTokens, "lookup">;
}

const refuse = (status: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code: -32001, message }, id: null }, { status, headers: { "cache-control": "no-store" } });

/**
 * Answer one MCP request, and say who made it (by its token) and what it called, for the
 * proxy's audit row: `tools/call <name>`, or why it was refused.
 */
export async function serve(
  d: McpDeps,
  req: Request,
): Promise<{ response: Response; who: { taskId: string | null; taskRef: string | null; role: string } | null; note: string | null }> {
  const auth = req.headers.get("authorization");
  const token = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : "";
  const holder = token ? d.tokens.lookup(token) : undefined;
  let note: string | null = holder ? null : token ? "unknown or revoked MCP token" : "no MCP token";
  // The body is read once, here: its method names the audit row, and the SDK is handed it parsed.
  // Not JSON: the SDK gets the text back and refuses it in its own words.
  let parsed: unknown;
  if (holder && req.method === "POST") {
    const text = await req.text();
    try {
      parsed = JSON.parse(text);
    } catch {
      req = new Request(req.url, { method: req.method, headers: req.headers, body: text });
    }
    const body = parsed as { method?: unknown; params?: { name?: unknown } } | null | undefined;
    if (body && typeof body.method === "string")
      note = body.method === "tools/call" && typeof body.params?.name === "string" ? `tools/call ${body.params.name}` : body.method;
  }
  let who: { taskId: string | null; taskRef: string | null; role: string } | null = null;
  if (holder?.kind === "task" && holder.taskId) {
    const code = (d.db.query("SELECT code FROM tasks WHERE id = ?").get(holder.taskId) as { code: string | null } | null)?.code ?? null;
    who = { taskId: holder.taskId, taskRef: code ?? holder.taskId, role: "agent" };
  } else if (holder) who = { taskId: null, taskRef: null, role: "builder" };
  return { response: await handle(d, req, parsed), who, note };
}

/**
 * One server per token, its tools registered once (building a server with its tools costs
 * ~0.4 ms, more than the rest of a call: bench/README.md "MCP"), reused for that token's
 * requests one at a time, each over a fresh stateless transport. Dropped when its token is no
 * longer known; at most MAX_SERVERS kept, the least recently used going first.
 */
const servers = new Map<string, { server: McpServer; chain: Promise<unknown> }>();
const MAX_SERVERS = 256;

function serverFor(d: McpDeps, token: string, holder: Holder): { server: McpServer; chain: Promise<unknown> } {
  let entry = servers.get(token);
  if (entry) {
    servers.delete(token); // re-inserted below: the map's order is recency
  } else {
    const server = new McpServer({ name: "lazy", version: VERSION }, { capabilities: { tools: {} } });
    if (holder.kind === "task" && holder.taskId) registerTaskTools(server, d, holder.taskId);
    else registerBuilderTools(server, d);
    entry = { server, chain: Promise.resolve() };
  }
  servers.set(token, entry);
  if (servers.size > MAX_SERVERS) servers.delete(servers.keys().next().value!);
  return entry;
}

/** Answer one MCP request (POST, GET or DELETE on MCP_PATH); `parsedBody`: a POST's body, already read. */
export async function handle(d: McpDeps, req: Request, parsedBody?: unknown): Promise<Response> {
  const auth = req.headers.get("authorization");
  const token = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : "";
  const holder = token ? d.tokens.lookup(token) : undefined;
  if (!holder) {
    if (token) servers.delete(token);
    return refuse(
      401,
      token
        ? "lazy's MCP route does not know this token: the task's session ended, or it was never lazy's."
        : "lazy's MCP route needs the task's token (Authorization: Bearer …).",
    );
  }
  const entry = serverFor(d, token, holder);
  const run = entry.chain.then(async () => {
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await entry.server.connect(transport);
    try {
      return await transport.handleRequest(req, parsedBody === undefined ? undefined : { parsedBody });
    } finally {
      await entry.server.close();
    }
  });
  entry.chain = run.catch(() => {});
  return run;
}
