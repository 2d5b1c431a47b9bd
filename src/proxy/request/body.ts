/**
 * The request path's fifth stage, the body: read whole and within the bound, whatever its
 * framing (gate.ts), before anything goes upstream. Too big is a 413 in the wire's shape; an
 * agent that went away is a 499 row.
 */
import type { Target } from "../identity";
import { type Body, MAX_BODY } from "../listen";
import type { Call } from "./call";
import { refusal } from "./errors";
import type { Wire } from "./surface";

/**
 * Stage 5, after listen's readBody: the body's bytes (undefined: none), or the refusal (its row
 * and log line written). Synchronous, so the path pays for one await of the read and no more.
 */
export function body(call: Call, read: Body, upstream: Target, wire: Wire): Uint8Array | undefined | Response {
  if (read.ok) return read.bytes;
  if (read.status === 413)
    return call.refuse(
      refusal(wire, { code: "body_too_large", declared: read.declared ?? null, limit: MAX_BODY }),
      read.declared !== undefined ? "body too large" : `chunked body passed ${MAX_BODY} bytes`,
      upstream.origin,
    );
  return call.refuse(new Response(null, { status: 499 }), read.why, upstream.origin);
}
