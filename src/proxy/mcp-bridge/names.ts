/**
 * Where lazy's MCP route is on the proxy's listeners, and the one refusal a proxy thread says
 * itself (no token), without asking the main thread, where the MCP server runs (src/mcp).
 */
export const MCP_PATH = "/mcp";

/** The refusal of an MCP request with no token: said by a proxy thread itself, without asking the main thread. */
export const MCP_NO_TOKEN = { message: "lazy's MCP route needs the task's token (Authorization: Bearer …).", note: "no MCP token" };
