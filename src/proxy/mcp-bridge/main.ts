/**
 * The MCP bridge's main-thread side: a proxy thread hands lazy's MCP route to the daemon's main
 * thread, where the MCP server runs (src/mcp, wired in by the daemon as an McpHandler). This
 * asks it, and turns "no server" and a server that threw into JSON-RPC errors the agent reads.
 */
import type { Logger } from "../../util/log";
import type { Ask, McpAdmit, McpAnswer, McpWho } from "../thread";
import { MCP_PATH } from "./names";

/**
 * Who answers lazy's MCP route on the main thread (the daemon wires src/mcp here): `admit`
 * decides on the caller from its token and address alone, before its body is read; `serve`
 * answers the request (checking the caller again: a token can be revoked in between).
 */
export interface McpHandler {
  admit(token: string, from: string): McpAdmit;
  serve(req: Request, from: string): Promise<{ response: Response; who: McpWho | null; note: string | null; counted?: boolean }>;
}

/** A proxy thread asks whether this token, from this address, may call lazy's MCP route. */
export function admit(handler: McpHandler | undefined, log: Logger, token: string, from: string): McpAdmit {
  if (!handler) return { ok: false, message: "lazy's MCP server is not running.", note: "no MCP server" };
  try {
    return handler.admit(token, from);
  } catch (e) {
    log.error(`lazy's MCP server failed: ${(e as Error).stack ?? e}`);
    return { ok: false, message: `lazy's MCP server failed: ${(e as Error).message}`, note: "MCP server error" };
  }
}

/** A proxy thread hands over an admitted MCP request (its body read under the bound): the server's answer. */
export async function answer(handler: McpHandler | undefined, log: Logger, a: Extract<Ask, { op: "mcp" }>): Promise<McpAnswer> {
  if (!handler)
    return {
      status: 503,
      headers: [["content-type", "application/json"]],
      body: JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "lazy's MCP server is not running." }, id: null }),
      who: null,
      note: "no MCP server",
    };
  try {
    const r = await handler.serve(new Request(`http://lazy${MCP_PATH}`, { method: a.method, headers: a.headers, body: a.body }), a.from);
    return {
      status: r.response.status,
      headers: [...r.response.headers],
      body: await r.response.text(),
      who: r.who,
      note: r.note,
      counted: r.counted,
    };
  } catch (e) {
    log.error(`lazy's MCP server failed: ${(e as Error).stack ?? e}`);
    return {
      status: 500,
      headers: [["content-type", "application/json"]],
      body: JSON.stringify({
        jsonrpc: "2.0",
        error: { code: -32603, message: `lazy's MCP server failed: ${(e as Error).message}` },
        id: null,
      }),
      who: null,
      note: "MCP server error",
    };
  }
}
