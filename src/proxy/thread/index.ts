/**
 * The proxy's threads: the request path runs on Workers of its own (entry.ts, the worker's
 * entry, started by file name: never imported), each held on the daemon's main thread by a
 * Thread (handle.ts), the two speaking the messages in messages.ts.
 */
export { type Owner, Thread } from "./handle";
export type { Ask, Call, FromThread, Init, Listening, McpAdmit, McpAnswer, McpWho, Stats, ToThread } from "./messages";
export { mergeStats } from "./stats";
