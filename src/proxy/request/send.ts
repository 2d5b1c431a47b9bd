/**
 * The request path's seventh stage, send: to the target, once more on a fresh connection if it
 * resets before answering (upstream/send.ts); a failure a fallback takes over goes on to the
 * next hop before a byte reached the agent (fallback.ts: each hop its own row, credential and
 * model; only lazy's credentials reroute). A send that failed for good is answered here, in the
 * wire's error shape, naming the provider and how far the request got.
 */

import type { Target, Targets } from "../identity";
import { healthKind, providerFailure, send, type UpstreamResponse } from "../upstream";
import { hostOf, joinUrl } from "./address";
import type { Call } from "./call";
import type { Context } from "./context";
import { errorResponse } from "./errors";
import { mayReroute, reroute } from "./fallback";
import { headerLines } from "./headers";
import type { Wire } from "./surface";

export interface Outgoing {
  upstream: Target;
  wire: Wire;
  /** The path and query as sent (after any plugin's rewrite). */
  path: string;
  query: string;
  /** The headers the lines were made from (the agent's, or a plugin's rewrite) and the lines. */
  headers: Headers;
  lines: string;
  body: Uint8Array | undefined;
  /** The credential headers lazy sets, and the stored credential's kind. */
  set: Readonly<Record<string, string>>;
  credentialKind: string | null;
  /** Whether a plugin ran: its rewrite goes on to every hop. */
  rewritten: boolean;
}

export interface Answered {
  res: UpstreamResponse;
  retries: number;
  /** The hop that answered (a fallback's, after a reroute). */
  upstream: Target;
  credentialKind: string | null;
}

/** Stage 7: the upstream's answer, or lazy's own (a failure, recorded). */
export async function sendOut(ctx: Context, call: Call, targets: Targets, o: Outgoing): Promise<Answered | Response> {
  const { req, base, started } = call;
  const departed = performance.now();
  let sent = await send(ctx, joinUrl(o.upstream, o.path) + o.query, req, o.lines, o.body);
  const bytesIn = o.body?.length ?? 0;
  call.lazyInMs = departed - started;
  let upstream = o.upstream;
  let credentialKind = o.credentialKind;

  const chain = call.grant && mayReroute(sent) ? (ctx.fallbacks?.().behind(upstream, targets.primary()) ?? []) : [];
  if (chain.length) {
    const lines = (set: Readonly<Record<string, string>>) => headerLines(o.headers, true, set);
    const first = { sent, target: upstream, credential: base.credential, credentialKind, hop: 0, since: started, departed };
    const hopTarget = o.rewritten ? o.path + o.query : call.target; // a plugin's rewrite goes on to each hop
    const r = await reroute(
      { ctx, req, target: hopTarget, body: o.body, lines, base, record: (o) => call.record(o), started },
      chain,
      first,
    );
    if ("response" in r) return r.response;
    ({ sent, credentialKind, target: upstream } = r);
    [call.hop, call.lazyInMs] = [r.hop, r.departed - r.since];
  }
  if (sent.ok) return { res: sent.res, retries: sent.retries, upstream, credentialKind };

  const wire = o.wire;
  if (sent.failure === "aborted") {
    call.record({ status: 499, bytesIn, retries: sent.retries, note: "agent disconnected before the response" });
    return new Response(null, { status: 499 });
  }
  if (sent.failure === "other") {
    const msg = `lazy's proxy failed to send the request to ${upstream.provider} (${hostOf(upstream)}): ${sent.detail}`;
    ctx.log.error(msg);
    call.record({ status: 502, bytesIn, retries: sent.retries, note: msg });
    return errorResponse(wire, 502, "api_error", msg);
  }
  const message = providerFailure(
    { provider: upstream.provider, host: hostOf(upstream), profile: call.grant?.profile ?? null, credential: base.credential },
    sent.failure,
    performance.now() - started,
    sent.detail,
  );
  ctx.health.record(upstream.provider, healthKind(sent.failure), message);
  ctx.log.warn(message);
  const status = sent.failure === "timeout" ? 504 : 502;
  call.record({ status, bytesIn, retries: sent.retries, note: message });
  return errorResponse(wire, status, "api_error", message, { "x-should-retry": "true" });
}
