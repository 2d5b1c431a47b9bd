/**
 * Who a caller is: the grant registry (every secret lazy gives out — a placeholder stands for a
 * role, a task and a profile; an MCP token, the MCP route's bearer token, for a task's agent or a
 * builder session — revoked together and pinned by one rule), the placeholders' shapes, the
 * targets a profile's traffic goes to with which credential, where a secret may be presented
 * from (the pin), which tasks' grants redeem now (the live set). Everything here is owned by the
 * daemon's main thread; the proxy threads get copies of the placeholders.
 */
export { Grants, Grant, Role, type Identity, type Options as GrantOptions, liveKey, notLive, FILE_NAME as GRANTS_FILE } from "./grants";
export * as Placeholders from "./placeholders";
export { Targets, type Target, BUILTIN, inferCredential, type UpstreamKind, type Wire } from "./targets";
export { isLoopback, offPin, offPinFrom, pinnedTo, pinOwner } from "./pin";
export { Live, PIDS_FILE } from "./live";
export { McpTokens, McpToken, Pid } from "./mcp-tokens";
