/**
 * The request path's fourth stage, with which credential: the target's, looked up per request
 * from memory, checked (stored.ts: stored, no line break in it) and put in the header its
 * provider reads. Only a caller with a grant gets one; a host session's own credential goes on
 * as it came.
 */
import type { Target } from "../identity";
import type { Call } from "./call";
import type { Context } from "./context";
import { refusal } from "./errors";
import { type Credential, carry, credentialOf, NONE } from "./stored";
import type { Wire } from "./surface";

/** Stage 4: the headers that carry the credential, or the refusal (its row and log line written). */
export function credential(ctx: Context, call: Call, upstream: Target, wire: Wire): Credential | Response {
  const grant = call.grant;
  if (!grant) return NONE;
  const c = credentialOf(ctx.credentials, upstream, grant.profile);
  if (!("cred" in c)) return call.refuse(refusal(wire, c.refusal), c.note, upstream.origin);
  if (!c.cred) return NONE;
  call.base.credential = upstream.credential;
  return carry(upstream.style, c.cred, () => call.req.headers.get("anthropic-beta"));
}
