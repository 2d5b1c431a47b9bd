/**
 * The request path: everything between a request arriving on a proxy thread's listener and
 * its answer going back. `handle` (forward.ts) runs the stages; `handleCursor` (cursor.ts) is
 * its variant for cursor-agent, which goes through the same `Call`, caller check, credential
 * stage and audit row but forwards verbatim and scrubs the answer. The forwarding surface, the proxy's own error shapes, the
 * fallbacks and the upstream addressing live here too, one concept a file.
 */

export { hostOf, joinUrl, OAUTH_BETA, withBeta } from "./address";
export type { Context } from "./context";
export { handleCursor, PREFIX as CURSOR_PREFIX } from "./cursor";
export { Scrubber, scrubStream } from "./cursor-scrub";
export { CursorSessions, type Sessions } from "./cursor-sessions";
export { errorResponse, NO_RETRY, REFUSAL_HEADER, type Refusal } from "./errors";
export { Fallbacks, type Hop, mayReroute, reroute, withModel } from "./fallback";
export { handle } from "./forward";
export { HOP, headerLines, presented, presentedBearer } from "./headers";
export { applyPlugins } from "./plugins";
export * as Surface from "./surface";
