/**
 * The MCP bridge: lazy's MCP route is served on the proxy's listeners (where task containers
 * reach), but its server runs on the daemon's main thread (src/mcp). Both sides are here: a
 * proxy thread checks, bounds, audits and hands the request over (thread.ts); the main thread
 * asks the MCP server (main.ts); the route's path and the refusal a thread says itself (names.ts). The MCP tokens are identity's.
 */

export { admit as admitMcp, answer as answerMcp, type McpHandler } from "./main";
export { MCP_NO_TOKEN, MCP_PATH } from "./names";
export { serveMcp, type ThreadSide } from "./thread";
