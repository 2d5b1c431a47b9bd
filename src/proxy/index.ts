/**
 * The model proxy, always on inside the daemon: every agent's model traffic passes through it.
 * It resolves a placeholder to its grant, forwards only the model API to the upstream the
 * grant's profile points at, swaps in the real credential at the last hop, and records each
 * call (a bounded audit trail, usage-limit readings, provider health).
 *
 * Its rooms: main/ (`ModelProxy`, on the daemon's main thread), thread/ (the proxy threads),
 * request/ (the request path, stage by stage, and its Cursor variant), identity/ (the grant
 * registry: placeholders and MCP tokens; targets, pins, the live set), listen/, upstream/, meters/, audit/,
 * plugins/, mcp-bridge/ (lazy's MCP route, answered on the main thread). This file is their
 * face to the rest of lazy, and holds nothing of its own.
 */
export { ModelProxy, type LaunchGrant, type ProxyState } from "./main";
export {
  Targets,
  type Target,
  type Grant,
  type Grants,
  notLive,
  liveKey,
  offPinFrom,
  pinnedTo,
  type McpTokens,
  type McpToken,
  Pid,
  GRANTS_FILE,
} from "./identity";
export { FAILURE_KINDS, type ProviderHealth } from "./meters";
export type { LimitView } from "./meters";
export type { Row as AuditRow, Batch as AuditBatch } from "./audit";
export { Recorder as AuditRecorder } from "./audit";
export { refusalCause } from "./meters";
export { MCP_PATH, MCP_NO_TOKEN, type McpHandler } from "./mcp-bridge";
export { CURSOR_PREFIX } from "./request";
export * as Plugins from "./plugins";
export type { Stats, McpAdmit, McpWho } from "./thread";
