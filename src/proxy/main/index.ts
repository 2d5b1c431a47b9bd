/**
 * The proxy's main-thread side: `ModelProxy`, the one object the daemon holds. It owns what
 * is durable (grants, the live set, the audit trail), starts the proxy threads and keeps their
 * copies current, and answers what they ask (Cursor sessions, the MCP route).
 */
export { type LaunchGrant, ModelProxy, type ProxyState } from "./model-proxy";
