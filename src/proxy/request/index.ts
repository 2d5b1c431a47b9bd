/**
 * The request path: everything between a request arriving on a proxy thread's listener and
 * its answer going back. `handle` (forward.ts) runs the stages; `handleCursor` (cursor.ts) is
 * its variant for cursor-agent, which reuses the caller checks and the audit row but forwards
 * verbatim and scrubs the answer. The forwarding surface, the proxy's own error shapes, the
 * fallbacks and the upstream addressing live here too, one concept a file.
 */
export { handle } from "./forward";
export type { Context } from "./context";
export { HOP, headerLines, presented, presentedBearer } from "./headers";
export * as Surface from "./surface";
export { errorResponse, NO_RETRY } from "./errors";
export { Fallbacks, mayReroute, reroute, withModel, type Hop } from "./fallback";
export { OAUTH_BETA, hostOf, joinUrl, withBeta } from "./address";
export { applyPlugins } from "./plugins";
export { handleCursor, PREFIX as CURSOR_PREFIX } from "./cursor";
export { CursorSessions, type Sessions } from "./cursor-sessions";
export { Scrubber, scrubStream } from "./cursor-scrub";
