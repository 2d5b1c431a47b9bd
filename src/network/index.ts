/**
 * The network room: what a task container can reach. The project's own bridge (bridge.ts, in
 * lazy's subnet range: subnets.ts), the firewall set on it in one script (firewall.ts): the
 * link-local metadata guard (link-local.ts) and the network fence (fence.ts); and the host's
 * own network setup carried into builds and containers (host-network.ts: its proxy and CA).
 * Docker itself is containers/'s, above this room: it hands in what the network needs of an
 * engine (on.ts). The egress forward proxy the fence lets containers reach sits beside it, in
 * src/egress/.
 */

export { ensure as ensureBridge, type Network, remove as removeBridge } from "./bridge";
export * as Fence from "./fence";
export type { NetworkOptions } from "./firewall";
export * as HostNet from "./host-network";
export type { Guard as LinkLocalGuard } from "./link-local";
export * as LinkLocal from "./link-local";
export type { EngineKind, On as NetworkEngine } from "./on";
export * as Subnets from "./subnets";
