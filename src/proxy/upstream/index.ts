/**
 * The way to the upstreams: lazy's own HTTP/1.1 client (client.ts: a keep-alive pool over
 * Bun.connect; http1.ts the connections and their parsing; exchange.ts one request and its
 * response), fetch for what the client does not carry (fetch.ts; everything under
 * `LAZY_UPSTREAM=fetch`), which way an origin is reached (way.ts: direct, through the host's
 * proxy, or refused), the sending with its one retry (send.ts), the relaying of a body to
 * the agent (relay.ts), and what a failure on the way is called (failures.ts).
 */
export { type Outgoing, request, UPSTREAM } from "./client";
export type { UpstreamResponse } from "./exchange";
export { firstSentence, healthKind, type NetFailure, providerFailure } from "./failures";
export { HOP_BY_HOP } from "./http1";
export { relay } from "./relay";
export { type Sent, send } from "./send";
export { decide as decideWay, refusal as wayRefusal, type Way, wayTo } from "./way";
