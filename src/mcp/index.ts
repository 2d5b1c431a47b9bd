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

export { McpTokens, FILE_NAME as MCP_TOKENS_FILE, type Holder } from "./tokens";

/** The path of lazy's MCP route on the listener agents reach. */
export const MCP_PATH = "/mcp";

export interface McpDeps extends TaskToolDeps {
  tokens: Pick<McpTokens, "lookup">;
}

const refuse = (status: number, message: string) =>
  Response.json({ jsonrpc: "2.0", error: { code: -32001, message }, id: null }, { status, headers: { "cache-control": "no-store" } });

/** Answer one MCP request (POST, GET or DELETE on MCP_PATH). */
export async function handle(d: McpDeps, req: Request): Promise<Response> {
  const auth = req.headers.get("authorization");
  const token = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : "";
  const holder = token ? d.tokens.lookup(token) : undefined;
  if (!holder) return refuse(401, token ? "lazy's MCP route does not know this token: the task's session ended, or it was never lazy's." : "lazy's MCP route needs the task's token (Authorization: Bearer …).");
  if (holder.kind !== "task" || !holder.taskId) return refuse(403, "Builder sessions' tools are not served yet.");
  const server = new McpServer({ name: "lazy", version: VERSION }, { capabilities: { tools: {} } });
  registerTaskTools(server, d, holder.taskId);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    return await transport.handleRequest(req);
  } finally {
    void server.close();
  }
}
