/**
 * Who a caller is: the grant registry (every secret lazy gives out — a placeholder stands for a
 * role, a task and a profile; an MCP token, the MCP route's bearer token, for a task's agent or a
 * builder session — revoked together and pinned by one rule), the placeholders' shapes, the
 * targets a profile's traffic goes to with which credential, where a secret may be presented
 * from (the pin), which tasks' grants redeem now (the live set). Everything here is owned by the
 * daemon's main thread; the proxy threads get copies of the placeholders.
 */
export { FILE_NAME as GRANTS_FILE, Grant, Grants, type Identity, liveKey, notLive, type Options as GrantOptions, Role } from "./grants";
export { Live, PIDS_FILE } from "./live";
export { McpToken, McpTokens, Pid } from "./mcp-tokens";
export { isLoopback, offPin, pinnedTo, pinOwner, refusedFrom } from "./pin";
export * as Placeholders from "./placeholders";
export { SECRET_SHAPE } from "./placeholders";
export { BUILTIN, inferCredential, type Target, Targets, type UpstreamKind, type Wire } from "./targets";
