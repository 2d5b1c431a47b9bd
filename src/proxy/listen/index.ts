/**
 * Where the proxy listens and what its listeners answer before any upstream: one Bun.serve per
 * address (server.ts), a port shared by the proxy's threads (shared-port.ts), the gate that
 * bounds what a container can make a thread hold (gate.ts), and the routes the listeners answer
 * themselves (roots.ts: a 404 for the daemon's API).
 */

export * from "./gate";
export * from "./roots";
export * from "./server";
export * from "./shared-port";
