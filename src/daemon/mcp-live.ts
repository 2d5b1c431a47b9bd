/**
 * A task's MCP token works only while the task has a running turn (or one of lazy's own calls
 * about it), like its placeholder (docs: "Lifetime"): a process the agent left behind, or a
 * token copied out, gets 401 naming why between turns. Wraps the MCP handler the daemon gives
 * the proxy; builder tokens are left to their session's lifetime (builder-sessions.ts).
 */
import type { Database } from "bun:sqlite";
import type { McpTokens } from "../mcp";
import { notLive, type ModelProxy } from "../proxy";

type Answer = {
  response: Response;
  who: { taskId: string | null; taskRef: string | null; role: string } | null;
  note: string | null;
};

export function liveOnly(
  d: { db: Database; tokens: Pick<McpTokens, "lookup">; proxy: Pick<ModelProxy, "isLive"> },
  handler: (req: Request) => Promise<Answer>,
): (req: Request) => Promise<Answer> {
  return async (req) => {
    const auth = req.headers.get("authorization");
    const token = auth?.startsWith("Bearer ") ? auth.slice(7).trim() : "";
    const holder = token ? d.tokens.lookup(token) : undefined;
    if (holder?.kind !== "task" || !holder.taskId || d.proxy.isLive(holder.taskId)) return handler(req);
    const code = (d.db.query("SELECT code FROM tasks WHERE id = ?").get(holder.taskId) as { code: string | null } | null)?.code ?? null;
    const ref = code ?? holder.taskId;
    return {
      response: Response.json(
        {
          jsonrpc: "2.0",
          error: {
            code: -32001,
            message: `lazy refused this MCP token: ${notLive({ taskId: holder.taskId, taskRef: ref, role: "agent" })}`,
          },
          id: null,
        },
        { status: 401, headers: { "cache-control": "no-store" } },
      ),
      who: { taskId: holder.taskId, taskRef: ref, role: "agent" },
      note: "no running turn",
    };
  };
}
