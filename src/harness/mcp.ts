/**
 * How each harness is given lazy's MCP tools headlessly (docs/wire.md, "MCP wiring per harness"): the server's address,
 * and its bearer token in a variable (never in a file lazy writes into the agent's folders).
 * The Pi extension below is lazy's own: Pi has no MCP of its own, so lazy writes this file,
 * which lists the server's tools at load and registers each as a Pi tool. An extension that
 * fails at load makes Pi exit 1, so a server that cannot be reached fails the turn loudly.
 */

/** The variable every harness reads lazy's MCP token from. */
export const MCP_TOKEN_VAR = "LAZY_MCP_TOKEN";
/** The variable lazy's Pi extension reads the MCP route's address from. */
export const MCP_URL_VAR = "LAZY_MCP_URL";
/** The server's name in each harness's configuration: its tools are `mcp__lazy__<tool>`. */
export const SERVER = "lazy";

/** lazy's Pi extension, written as `lazy-mcp.ts` in Pi's folder and loaded with `-e`. */
export const PI_EXTENSION = `// Written by lazy before every turn: lazy's MCP tools as Pi tools. Edits are overwritten.
export default async function lazyMcp(pi: any) {
  const url = process.env.${MCP_URL_VAR};
  const token = process.env.${MCP_TOKEN_VAR};
  if (!url || !token) throw new Error("lazy's MCP route is not configured (${MCP_URL_VAR}, ${MCP_TOKEN_VAR})");
  let id = 0;
  const rpc = async (method: string, params: unknown) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer " + token },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error("lazy's MCP route answered " + res.status + ": " + text.slice(0, 300));
    const body = JSON.parse(text);
    if (body.error) throw new Error(body.error.message);
    return body.result;
  };
  await rpc("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "lazy-pi-extension", version: "1" } });
  const { tools } = await rpc("tools/list", {});
  for (const t of tools) {
    pi.registerTool({
      name: "mcp__${SERVER}__" + t.name,
      label: t.name,
      description: t.description ?? t.name,
      parameters: t.inputSchema ?? { type: "object", properties: {} },
      async execute(_id: string, params: unknown) {
        const r = await rpc("tools/call", { name: t.name, arguments: params ?? {} });
        const out = (r.content ?? []).map((c: any) => c.text ?? "").join("\\n");
        if (r.isError) throw new Error(out || "the tool failed");
        return { content: [{ type: "text", text: out }], details: {} };
      },
    });
  }
}
`;
