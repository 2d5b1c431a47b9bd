/**
 * cursor-agent's route, /_lazy/cursor/<placeholder>/…: forwarded verbatim to Cursor's API with
 * the grant honoured (route.ts), and every answer scrubbed of real credentials (scrub.ts).
 */
export * from "./route";
export * from "./scrub";
