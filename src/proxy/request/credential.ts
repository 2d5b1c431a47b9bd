/**
 * The request path's fourth stage, with which credential: the target's, looked up per request
 * from memory, checked (stored, no line break in it) and put in the header its provider reads.
 * Only a caller with a grant gets one; a host session's own credential goes on as it came.
 */
import type { Target } from "../identity";
import { hostOf, OAUTH_BETA, withBeta } from "./address";
import type { Call } from "./call";
import type { Context } from "./context";
import { refusal } from "./errors";
import type { Wire } from "./surface";

export interface Credential {
  /** Headers lazy sets upstream (replacing any the agent sent of these names). */
  set: Record<string, string>;
  /** The stored credential's kind (oauth-token, api-key…), null when none went in. */
  kind: string | null;
}

/** Stage 4: the headers that carry the credential, or the refusal (its row and log line written). */
export function credential(ctx: Context, call: Call, upstream: Target, wire: Wire): Credential | Response {
  // Plain bytes from the upstream, so the usage tap can read the stream (docs/wire.md, "Runtime traps").
  const set: Record<string, string> = { "accept-encoding": "identity" };
  const grant = call.grant;
  if (!grant) return { set, kind: null };
  if (upstream.unmapped)
    return call.refuse(
      refusal(wire, { code: "credential_unmapped", provider: upstream.provider, host: hostOf(upstream), why: upstream.unmapped }),
      "no credential mapped",
      upstream.origin,
    );
  if (!upstream.credential) return { set, kind: null };
  const cred = ctx.credentials.get(upstream.credential);
  if (!cred)
    return call.refuse(
      refusal(wire, {
        code: "credential_not_stored",
        credential: upstream.credential,
        provider: upstream.provider,
        host: hostOf(upstream),
        profile: grant.profile,
      }),
      `credential ${upstream.credential} missing`,
      upstream.origin,
    );
  if (/[\r\n\0]/.test(cred.value))
    return call.refuse(
      refusal(wire, { code: "credential_malformed", credential: upstream.credential }),
      `credential ${upstream.credential} malformed`,
      upstream.origin,
    );
  call.base.credential = upstream.credential;
  if (upstream.style === "anthropic" && cred.kind !== "oauth-token") set["x-api-key"] = cred.value;
  else {
    set.authorization = `Bearer ${cred.value}`;
    if (upstream.style === "anthropic") set["anthropic-beta"] = withBeta(call.req.headers.get("anthropic-beta"), OAUTH_BETA);
  }
  return { set, kind: cred.kind };
}
