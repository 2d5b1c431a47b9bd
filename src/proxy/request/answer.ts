/**
 * The request path's last stage, the answer: what the upstream said goes back to the agent
 * unchanged, while lazy reads what it may off it — usage-limit readings (allowlisted headers),
 * provider health (a refusal told apart as quota or a short rate limit), a rejected OAuth token
 * (worded for lazy doctor), token usage (the side tap) — and records the row once it is done:
 * at once for a whole answer of modest size, when the relay ends for a stream.
 */
import { endOfTurn } from "../../util/turn";
import * as Meters from "../meters";
import { relay } from "../upstream";
import { hostOf } from "./address";
import type { Call } from "./call";
import type { Context } from "./context";
import { errorResponse } from "./errors";
import type { Answered } from "./send";
import type { Wire } from "./surface";

/** The owner a reading is kept under, made once per grant (or target) rather than per request. */
const owners = new WeakMap<object, string>();
function ownerOf(of: object, kind: string, name: string): string {
  let o = owners.get(of);
  if (o === undefined) {
    o = kind + name;
    owners.set(of, o);
  }
  return o;
}

/** Non-streamed answers up to this size are taken whole rather than relayed chunk by chunk. */
const MAX_BUFFERED = 8 * 1024 * 1024;

/** Stage 8: the answer the agent gets. `bytesIn` is the body's size as sent. */
export async function answer(ctx: Context, call: Call, a: Answered, wire: Wire, bytesIn: number): Promise<Response> {
  const { req, base, grant, pass } = call;
  const { res, retries, upstream, credentialKind } = a;
  call.back = performance.now();
  const ttfb = call.back - call.started;

  // Usage-limit readings: only the allowlisted headers, named by who owns the credential.
  const owner =
    grant && !call.hop ? ownerOf(grant, "credential:", grant.envVar) : call.token ? ownerOf(upstream, "upstream:", upstream.origin) : null;
  if (owner) ctx.limits.record(owner, base.credential, upstream.origin, res.status, Meters.filter(res.headers));

  // Provider health; a refusal is told apart (quota or a short rate limit) once its body, when
  // small and whole, can be read. The agent gets the answer unchanged either way.
  const failure = Meters.kindOfStatus(res.status);
  const maybeRefusal = res.status === 429 || res.status === 402 || res.status === 403;
  if (!maybeRefusal) ctx.health.record(upstream.provider, failure, failure ? `${upstream.provider} answered ${res.status}` : undefined);
  const settle = (body?: Uint8Array): string | null => {
    if (!maybeRefusal) return null;
    const r = Meters.classify(res.status, res.headers, body && body.length <= 65_536 ? new TextDecoder().decode(body) : undefined);
    const kind = r?.kind === "quota" ? "quota" : failure;
    ctx.health.record(upstream.provider, kind, kind ? `${upstream.provider} answered ${res.status}${r ? `: ${r.detail}` : ""}` : undefined);
    if (r && owner) ctx.limits.refused(owner, r);
    return r ? r.detail : null;
  };

  // An upstream 401 for an OAuth token: say what it means (lazy never refreshes tokens itself).
  if (res.status === 401 && credentialKind === "oauth-token" && base.credential) {
    res.cancel();
    const message = `${upstream.provider} (${hostOf(upstream)}, profile ${grant!.profile}) rejected the stored OAuth token "${base.credential}": it expired or was revoked. Make a new one (claude setup-token) and store it: lazy auth set ${base.credential}.`;
    ctx.credentialProblems.set(base.credential, message);
    call.record({ status: 401, ttfbMs: ttfb, bytesIn, retries, note: "OAuth token rejected upstream" });
    return errorResponse(wire, 401, "authentication_error", message);
  }
  if (res.ok && base.credential) ctx.credentialProblems.delete(base.credential);

  const outHeaders = res.headers;
  if (!res.hasBody || req.method === "HEAD") {
    res.cancel();
    if (req.method === "HEAD" && res.length !== undefined) outHeaders.set("content-length", String(res.length));
    call.record({ status: res.status, ttfbMs: ttfb, bytesIn, retries, note: settle() });
    return new Response(null, { status: res.status, headers: outHeaders });
  }
  const contentType = res.headers.get("content-type");
  // A refusal's JSON error body is read whole even when its length is not announced: its code
  // tells a used-up quota from a short rate limit (quota.ts).
  const refusalBody = maybeRefusal && res.length === undefined && !!contentType?.includes("json");
  if (!contentType?.includes("event-stream") && ((res.length !== undefined && res.length <= MAX_BUFFERED) || refusalBody)) {
    // A whole answer of known, modest size: take it in one piece. Relaying it chunk by chunk
    // through a JS stream costs more than the rest of the request path together.
    const bytes = await res.bytes().catch(() => null);
    if (bytes) {
      const read = res.headers.get("content-encoding") ? null : Meters.UsageTap.read(wire, contentType, bytes);
      call.record({
        status: res.status,
        ttfbMs: ttfb,
        bytesIn,
        bytesOut: bytes.length,
        usage: read?.usage ?? null,
        modelServed: read?.model ?? null,
        retries,
        note: settle(bytes),
      });
      // Answered with the others that are ready this turn (util/turn.ts).
      await endOfTurn();
      return new Response(bytes, { status: res.status, statusText: res.statusText, headers: outHeaders });
    }
  }
  const tap = res.headers.get("content-encoding") ? null : new Meters.UsageTap(wire, contentType);
  const refusal = settle();
  pass.held = true;
  const lazyOutMs = performance.now() - call.back;
  return new Response(
    relay(res.stream(), tap, (bytesOut, note) => {
      pass.release();
      call.record({
        status: res.status,
        ttfbMs: ttfb,
        bytesIn,
        bytesOut,
        usage: tap ? tap.end() : null,
        modelServed: tap?.model ?? null,
        retries,
        note: [refusal, note].filter(Boolean).join("; ") || null,
        lazyOutMs,
      });
      if (note?.startsWith("upstream")) ctx.health.record(upstream.provider, "reset", `${upstream.provider} (${hostOf(upstream)}) ${note}`);
    }),
    { status: res.status, statusText: res.statusText, headers: outHeaders },
  );
}
