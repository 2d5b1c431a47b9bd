/**
 * The one way an audit row is made: who and what the request was (its head, known before the
 * answer) and how it went (what is not given is null, or 0 for counts). The request paths
 * (request/: the path and its Cursor variant; the MCP route) write only what differs.
 */
import type { Counts } from "../meters";
import type { Row } from "./store";

/** Who made the request and what it asked for. */
export type RowHead = Pick<
  Row,
  "at" | "taskId" | "taskRef" | "role" | "profile" | "credential" | "upstream" | "method" | "path" | "modelAsked"
>;

/** How it went (besides how long it took). */
export interface Outcome {
  status: number;
  ttfbMs?: number | null;
  bytesIn?: number;
  bytesOut?: number;
  usage?: Counts | null;
  retries?: number;
  note?: string | null;
  /** Which hop of a rerouted request this row is (0: the upstream it was meant for). */
  hop?: number;
  /** lazy's own added time on the way up and on the way back (store.ts Row). */
  lazyInMs?: number | null;
  lazyOutMs?: number | null;
  /** The model the upstream said it served (read off the answer with its usage). */
  modelServed?: string | null;
}

export function auditRow(head: RowHead, durationMs: number, o: Outcome): Row {
  return {
    at: head.at,
    taskId: head.taskId,
    taskRef: head.taskRef,
    role: head.role,
    profile: head.profile,
    credential: head.credential,
    upstream: head.upstream,
    method: head.method,
    path: head.path,
    status: o.status,
    durationMs,
    ttfbMs: o.ttfbMs ?? null,
    bytesIn: o.bytesIn ?? 0,
    bytesOut: o.bytesOut ?? 0,
    usage: o.usage ?? null,
    retries: o.retries ?? 0,
    note: o.note ?? null,
    hop: o.hop ?? 0,
    lazyInMs: o.lazyInMs ?? null,
    lazyOutMs: o.lazyOutMs ?? null,
    modelAsked: head.modelAsked ?? null,
    modelServed: o.modelServed ?? null,
  };
}
