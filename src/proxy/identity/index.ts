/**
 * Who a caller is: the grants (a placeholder stands for a role, a task and a profile), the
 * placeholders' shapes, the targets a profile's traffic goes to with which credential, where a
 * placeholder may be presented from (the pin), which tasks' grants redeem now (the live set),
 * and the MCP tokens (lazy's MCP route's bearer tokens, the same idea for the MCP tools: a
 * token stands for a task's agent or a builder session, pinned and live-checked like a grant).
 * Everything here is owned by the daemon's main thread; the proxy threads get copies.
 */
export { Grants, Grant, Role, type Identity, type Options as GrantOptions, liveKey, notLive, FILE_NAME as GRANTS_FILE } from "./grants";
export * as Placeholders from "./placeholders";
export { Targets, type Target, BUILTIN, inferCredential, type UpstreamKind, type Wire } from "./targets";
export { isLoopback, offPin, pinnedTo, pinOwner } from "./pin";
export { Live, PIDS_FILE } from "./live";
export { McpTokens, Holder, FILE_NAME as MCP_TOKENS_FILE } from "./mcp-tokens";
