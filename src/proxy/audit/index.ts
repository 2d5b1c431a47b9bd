/**
 * The proxy's audit trail: one row per request of a caller lazy can attribute (its refusals and
 * 401s included), recorded on the proxy's threads (recorder.ts), written off the hot path by a
 * worker (writer.ts) in batches (store.ts: the stored form, the row and bound types), read and
 * bounded on the daemon's main thread (trail.ts). Token totals per task and per day are
 * counters beside it, so they survive the trail's eviction. Refusals of callers lazy cannot
 * attribute are counted per minute, source and reason instead (refusals.ts), under a bound of
 * their own. Nothing secret is ever written: a credential appears by its label only, and a
 * Cursor path without its placeholder segment.
 */
export { Recorder } from "./recorder";
export type { Refusal, Tally as RefusalTally } from "./refusals";
export { auditRow, type Outcome, type RowHead } from "./row";
export { type Batch, type Bounds, buffers, type Row } from "./store";
export { Audit } from "./trail";
