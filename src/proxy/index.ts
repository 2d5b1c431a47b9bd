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

export type { Batch as AuditBatch, RefusalTally as AuditRefusalTally, Row as AuditRow } from "./audit";
export { Recorder as AuditRecorder } from "./audit";
export {
  GRANTS_FILE,
  type Grant,
  type Grants,
  liveKey,
  type McpToken,
  type McpTokens,
  notLive,
  Pid,
  Placeholders,
  pinnedTo,
  refusedFrom,
  type Target,
  Targets,
} from "./identity";
export { type LaunchGrant, ModelProxy, type ProxyState } from "./main";
export { MCP_NO_TOKEN, MCP_PATH, type McpHandler } from "./mcp-bridge";
export type { LimitView } from "./meters";
export { FAILURE_KINDS, type ProviderHealth, refusalCause } from "./meters";
export * as Plugins from "./plugins";
export { CURSOR_PREFIX } from "./request";
export type { McpAdmit, McpWho, Stats } from "./thread";
export { decideWay, HOP_BY_HOP, type Way } from "./upstream";
