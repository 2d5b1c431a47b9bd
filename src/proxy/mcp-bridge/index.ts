/**
 * The MCP bridge: lazy's MCP route is served on the proxy's listeners (where task containers
 * reach), but its server runs on the daemon's main thread (src/mcp). A proxy thread bounds and
 * hands the request over (thread/entry.ts); the main thread's side is here (main.ts), with the
 * route's path and the refusal a thread says itself (names.ts). The MCP tokens are identity's.
 */
export { MCP_NO_TOKEN, MCP_PATH } from "./names";
export { type McpHandler, admit as admitMcp, answer as answerMcp } from "./main";
