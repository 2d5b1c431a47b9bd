/**
 * The request path: identify the caller by its placeholder, pick the upstream its profile
 * points at, check the forwarding surface, swap in the real credential, stream both ways,
 * and record the call (audit, usage readings, provider health) off the hot path.
 */
import type { Server } from "bun";
import type { CredentialStore } from "../credentials";
import type { Logger } from "../util/log";
import * as Surface from "./surface";
import * as Readings from "./meters";
import { UsageTap } from "./meters";
import type { Grants } from "./grants";
import { callerRefusal, presented } from "./caller";
import type { Targets, Target } from "./targets";
import { auditRow, type Recorder, type Outcome, type RowHead } from "./audit";
import type { Limits } from "./meters";
import { kindOfStatus, type Health } from "./meters";
import { errorResponse } from "./errors";
import * as Quota from "./meters";
import { HOP_BY_HOP, healthKind, providerFailure, relay, send } from "./upstream";
import { endOfTurn } from "../util/turn";
import { pathOf } from "../util/url";
import { MAX_BODY, dropBody, readBody, type Pass } from "./listen";
import { mayReroute, reroute, type Fallbacks } from "./fallback";
import { OAUTH_BETA, joinUrl, withBeta } from "./address";
import { applyPlugins, type Chain } from "./plugins";

export interface Context {
  grants: Pick<Grants, "lookup">;
  /** Why a task's turns are stopped at their next request (a budget reached), if they are. */
  stopped: (taskId: string) => string | undefined;
  /** Whether a turn, or one of lazy's own calls, about the task runs now: only then do its grants redeem. */
  live: (taskId: string) => boolean;
  credentials: Pick<CredentialStore, "get">;
  targets: () => Targets;
  audit: Pick<Recorder, "record">;
  limits: Pick<Limits, "record" | "refused">;
  health: Health;
  log: Logger;
  firstByteTimeoutMs: () => number;
  /** OAuth credentials an upstream rejected, for lazy doctor: name → sentence. */
  credentialProblems: Map<string, string>;
  /** [[proxy.fallback]], in order (fallback.ts); none when absent. */
  fallbacks?: () => Fallbacks;
  /** The request plugins ([[proxy.plugins]]); null (or absent) when none is configured. */
  plugins?: () => Chain | null;
}

// Hop-by-hop headers never cross a proxy; host is ours, not the upstream's (TRAPS.md).
export const HOP = ["host", ...HOP_BY_HOP];
// Headers that once named a task or role: attribution is the grant's alone, and these never go upstream.
const SELF_REPORTED = ["x-lazy-role", "x-lazy-task-id"];
const DROPPED = new Set([...HOP, ...SELF_REPORTED, "accept-encoding"]);
/** Non-streamed answers up to this size are taken whole rather than relayed chunk by chunk. */
const MAX_BUFFERED = 8 * 1024 * 1024;

/**
 * `pass` is the request's admission (gate.ts): released when the answer is done, by the
 * caller for a whole answer, here (`held`) for a relayed stream.
 */
export async function handle(ctx: Context, req: Request, server: Server<undefined>, pass: Pass): Promise<Response> {
  const started = performance.now();
  // The listener's idle timeout holds until the body is read (gate.ts); no deadline after it.
  const target = pathOf(req.url); // a getter that builds a new string each time: read it once

  // 1. Who is calling: the grant its placeholder resolves to, never what it says about itself
  // (no header names a task or a role; with no grant the row names none).
  const token = presented(req.headers);
  const grant = token ? ctx.grants.lookup(token) : undefined;
  const base: RowHead = {
    at: Date.now(),
    taskId: grant ? grant.taskId : null,
    taskRef: grant ? grant.taskRef : null,
    role: grant ? grant.role : null,
    profile: grant?.profile ?? null,
    credential: null,
    upstream: "",
    method: req.method,
    path: pathOnly(target),
  };
  // Which hop the row is about (a reroute's, fallback.ts) and lazy's own time before it left,
  // and from the answer's head back (`back`) to the agent. What request plugins noted rides on
  // every row this request makes.
  const leg = { hop: 0, lazyInMs: null as number | null, back: 0 };
  let pluginNote: string | null = null;
  const record = (o: Outcome) => {
    o.hop ??= leg.hop;
    o.lazyInMs ??= leg.lazyInMs;
    o.lazyOutMs ??= leg.back ? performance.now() - leg.back : null;
    if (pluginNote) o.note = o.note ? `${pluginNote}; ${o.note}` : pluginNote;
    ctx.audit.record(auditRow(base, performance.now() - started, o));
  };
  // A refusal before the body is read throws the body away as it arrives: closing a socket with
  // unread bytes resets it, and the reset can overtake the answer (gate.ts).
  let unread = true;
  const refuse = (res: Response, note: string, upstream: string): Response => {
    if (unread) dropBody(req, pass);
    base.upstream = upstream;
    record({ status: res.status, note });
    // A container can send refused requests by the thousand: one line a minute per kind.
    ctx.log.repeated(
      "warn",
      `${res.status} ${note}`,
      `${res.status} ${req.method} ${base.path} ${note}${base.taskRef ? ` (task ${base.taskRef})` : ""}`,
    );
    return res;
  };

  // No credential at all: only the surface's reachability probes (HEAD; Claude Code's
  // `HEAD /api/hello` comes before it authenticates) go on; anything else needs a placeholder.
  if (!token && req.method !== "HEAD")
    return refuse(
      errorResponse(
        "anthropic",
        401,
        "authentication_error",
        "lazy's proxy refused a request with no credential: send the placeholder lazy gave the task (in x-api-key or Authorization: Bearer). Only the HEAD reachability probes pass without one.",
      ),
      "no credential",
      ctx.targets().primary().origin,
    );

  // Whose placeholder, from where, while which turn runs (caller.ts): one refusal per reason.
  const denied = callerRefusal(req, server, token, grant, ctx.live);
  if (denied)
    return refuse(errorResponse("anthropic", 401, "authentication_error", denied.message), denied.note, ctx.targets().primary().origin);

  // 2. Where it goes: the grant's profile decides; traffic with no grant goes to the primary.
  const targets = ctx.targets();
  let upstream: Target | undefined = grant ? targets.forProfile(grant.profile) : targets.primary();
  if (!upstream)
    return refuse(
      errorResponse(
        "anthropic",
        401,
        "authentication_error",
        `lazy's proxy refused the request: profile ${grant!.profile} is no longer in lazy.toml, so its placeholder leads nowhere. Start the task again with an existing profile.`,
      ),
      `profile ${grant!.profile} gone`,
      "",
    );
  base.upstream = upstream.origin;
  const wire: Surface.Wire = upstream.wire === "openai" ? "openai" : "anthropic";

  // A cursor-agent profile's placeholder redeems the Cursor key on the Cursor route only, where
  // the answer is scrubbed of it (cursor.ts); here it would go to Cursor's API unscrubbed.
  if (grant && upstream.kind === "cursor")
    return refuse(
      Response.json(
        {
          type: "error",
          error: {
            type: "permission_error",
            message: `lazy's proxy refused this placeholder on ${req.method} ${base.path}: it belongs to profile ${grant.profile}, a cursor-agent profile, whose placeholder works only under /_lazy/cursor/<placeholder>/.`,
          },
        },
        { status: 403, headers: { "x-should-retry": "false" } },
      ),
      `placeholder of Cursor profile ${grant.profile} on the ordinary route`,
      upstream.origin,
    );

  // A task that reached its budget: its turn stops here, and the agent is told why.
  const stop = grant?.taskId ? ctx.stopped(grant.taskId) : undefined;
  if (stop)
    return refuse(
      errorResponse(wire, 403, "permission_error", `lazy's proxy stopped this turn: ${stop}.`),
      `budget: ${stop}`,
      upstream.origin,
    );

  // 3. What it may ask for: the forwarding surface, in source.
  const kind = upstream.kind === "cursor" ? "anthropic-primary" : upstream.kind;
  const verdict = Surface.check(kind, req.method, target, req.headers);
  if (!verdict.ok)
    return refuse(
      Response.json(Surface.refusalBody(wire, verdict), { status: 403, headers: { "x-should-retry": "false" } }),
      `refused: ${verdict.reason}`,
      upstream.origin,
    );

  // 4. With which credential: the target's, looked up per request, from memory.
  // Plain bytes from the upstream, so the usage tap can read the stream (TRAPS.md).
  const set: Record<string, string> = { "accept-encoding": "identity" };
  let credentialKind: string | null = null;
  if (grant) {
    if (upstream.unmapped)
      return refuse(
        errorResponse(
          wire,
          401,
          "authentication_error",
          `lazy's proxy has no credential mapped for ${upstream.provider} (${host(upstream)}): ${upstream.unmapped}.`,
        ),
        "no credential mapped",
        upstream.origin,
      );
    if (upstream.credential) {
      const cred = ctx.credentials.get(upstream.credential);
      if (!cred)
        return refuse(
          errorResponse(
            wire,
            401,
            "authentication_error",
            `lazy's proxy has no credential "${upstream.credential}" for ${upstream.provider} (${host(upstream)}, profile ${grant.profile}): store it with lazy auth set ${upstream.credential}.`,
          ),
          `credential ${upstream.credential} missing`,
          upstream.origin,
        );
      if (/[\r\n\0]/.test(cred.value))
        return refuse(
          errorResponse(
            wire,
            401,
            "authentication_error",
            `lazy's proxy will not send the stored credential "${upstream.credential}": it contains a line break. Store it again: lazy auth set ${upstream.credential}.`,
          ),
          `credential ${upstream.credential} malformed`,
          upstream.origin,
        );
      base.credential = upstream.credential;
      credentialKind = cred.kind;
      if (upstream.style === "anthropic" && cred.kind !== "oauth-token") set["x-api-key"] = cred.value;
      else {
        set.authorization = `Bearer ${cred.value}`;
        if (upstream.style === "anthropic") set["anthropic-beta"] = withBeta(req.headers.get("anthropic-beta"), OAUTH_BETA);
      }
    }
  }
  let headers = headerLines(req.headers, grant !== undefined, set);

  // 5. The body, whole and within the bound, whatever its framing (gate.ts); nothing has gone
  // upstream yet. Then send, once more on a fresh connection if the upstream resets before answering.
  unread = false;
  const read = await readBody(req, pass);
  if (!read.ok) {
    if (read.status === 413)
      return refuse(
        errorResponse(
          wire,
          413,
          "request_too_large",
          `lazy's proxy refused a ${read.declared !== undefined ? `${read.declared}-byte` : "chunked"} request body: the limit is ${MAX_BODY} bytes. Send a smaller request.`,
        ),
        read.declared !== undefined ? "body too large" : `chunked body passed ${MAX_BODY} bytes`,
        upstream.origin,
      );
    return refuse(new Response(null, { status: 499 }), read.why, upstream.origin);
  }
  let body = read.bytes;
  let [sendPath, sendQuery, sendHeaders] = [verdict.path, verdict.query, req.headers];

  // 6. Request plugins see it now, before the credential goes in; a rewrite meets the surface again.
  const plugins = ctx.plugins?.();
  if (plugins) {
    const out = await applyPlugins(plugins, {
      req,
      kind,
      wire,
      path: sendPath,
      query: sendQuery,
      body,
      dropped: DROPPED,
      task: base.taskRef,
      profile: base.profile,
      upstream: upstream.origin,
      asked: base.path,
    });
    pluginNote = out.note;
    if (!out.ok) return refuse(out.response, out.why, upstream.origin);
    [sendPath, sendQuery, body] = [out.path, out.query, out.body];
    if (out.headers) [sendHeaders, headers] = [out.headers, headerLines(out.headers, true, set)];
  }
  const departed = performance.now();
  let sent = await send(ctx, joinUrl(upstream, sendPath) + sendQuery, req, headers, body);
  const bytesIn = body?.length ?? 0;
  leg.lazyInMs = departed - started;

  // A failure a fallback takes over goes on to the next hop, before a byte reached the agent
  // (fallback.ts: each hop its own row, credential and model). Only lazy's credentials reroute.
  const chain = grant && mayReroute(sent) ? (ctx.fallbacks?.().behind(upstream, targets.primary()) ?? []) : [];
  if (chain.length) {
    const lines = (set: Record<string, string>) => headerLines(sendHeaders, true, set);
    const first = { sent, target: upstream, credential: base.credential, credentialKind, hop: 0, since: started, departed };
    const hopTarget = plugins ? sendPath + sendQuery : target; // a plugin's rewrite goes on to each hop
    const r = await reroute({ ctx, req, target: hopTarget, body, lines, base, record, started }, chain, first);
    if ("response" in r) return r.response;
    ({ sent, credentialKind, target: upstream } = r);
    [leg.hop, leg.lazyInMs] = [r.hop, r.departed - r.since];
  }

  if (!sent.ok) {
    if (sent.failure === "aborted") {
      record({ status: 499, bytesIn, retries: sent.retries, note: "agent disconnected before the response" });
      return new Response(null, { status: 499 });
    }
    if (sent.failure === "other") {
      const msg = `lazy's proxy failed to send the request to ${upstream.provider} (${host(upstream)}): ${sent.detail}`;
      ctx.log.error(msg);
      record({ status: 502, bytesIn, retries: sent.retries, note: msg });
      return errorResponse(wire, 502, "api_error", msg);
    }
    const message = providerFailure(
      { provider: upstream.provider, host: host(upstream), profile: grant?.profile ?? null, credential: base.credential },
      sent.failure,
      performance.now() - started,
      sent.detail,
    );
    ctx.health.record(upstream.provider, healthKind(sent.failure), message);
    ctx.log.warn(message);
    const status = sent.failure === "timeout" ? 504 : 502;
    record({ status, bytesIn, retries: sent.retries, note: message });
    return errorResponse(wire, status, "api_error", message, { "x-should-retry": "true" });
  }

  const res = sent.res;
  leg.back = performance.now();
  const ttfb = leg.back - started;

  // Usage-limit readings: only the allowlisted headers, named by who owns the credential.
  const owner = grant && !leg.hop ? `credential:${grant.envVar}` : token ? `upstream:${upstream.origin}` : null;
  if (owner) ctx.limits.record(owner, base.credential, upstream.origin, res.status, Readings.filter(res.headers));

  // Provider health; a refusal is told apart (quota or a short rate limit) once its body, when
  // small and whole, can be read. The agent gets the answer unchanged either way.
  const failure = kindOfStatus(res.status);
  const maybeRefusal = res.status === 429 || res.status === 402 || res.status === 403;
  if (!maybeRefusal) ctx.health.record(upstream.provider, failure, failure ? `${upstream.provider} answered ${res.status}` : undefined);
  const settle = (body?: Uint8Array): string | null => {
    if (!maybeRefusal) return null;
    const r = Quota.classify(res.status, res.headers, body && body.length <= 65_536 ? new TextDecoder().decode(body) : undefined);
    const kind = r?.kind === "quota" ? "quota" : failure;
    ctx.health.record(upstream.provider, kind, kind ? `${upstream.provider} answered ${res.status}${r ? `: ${r.detail}` : ""}` : undefined);
    if (r && owner) ctx.limits.refused(owner, r);
    return r ? r.detail : null;
  };

  // An upstream 401 for an OAuth token: say what it means (lazy never refreshes tokens itself).
  if (res.status === 401 && credentialKind === "oauth-token" && base.credential) {
    res.cancel();
    const message = `${upstream.provider} (${host(upstream)}, profile ${grant!.profile}) rejected the stored OAuth token "${base.credential}": it expired or was revoked. Make a new one (claude setup-token) and store it: lazy auth set ${base.credential}.`;
    ctx.credentialProblems.set(base.credential, message);
    record({ status: 401, ttfbMs: ttfb, bytesIn, retries: sent.retries, note: "OAuth token rejected upstream" });
    return errorResponse(wire, 401, "authentication_error", message);
  }
  if (res.ok && base.credential) ctx.credentialProblems.delete(base.credential);

  const outHeaders = res.headers;
  if (!res.hasBody || req.method === "HEAD") {
    res.cancel();
    if (req.method === "HEAD" && res.length !== undefined) outHeaders.set("content-length", String(res.length));
    record({ status: res.status, ttfbMs: ttfb, bytesIn, retries: sent.retries, note: settle() });
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
      const usage = res.headers.get("content-encoding") ? null : UsageTap.of(wire, contentType, bytes);
      record({ status: res.status, ttfbMs: ttfb, bytesIn, bytesOut: bytes.length, usage, retries: sent.retries, note: settle(bytes) });
      // Answered with the others that are ready this turn (util/turn.ts).
      await endOfTurn();
      return new Response(bytes, { status: res.status, statusText: res.statusText, headers: outHeaders });
    }
  }
  const tap = res.headers.get("content-encoding") ? null : new UsageTap(wire, contentType);
  const refusal = settle();
  pass.held = true;
  const lazyOutMs = performance.now() - leg.back;
  return new Response(
    relay(res.stream(), tap, (bytesOut, note) => {
      pass.release();
      record({
        status: res.status,
        ttfbMs: ttfb,
        bytesIn,
        bytesOut,
        usage: tap ? tap.end() : null,
        retries: sent.retries,
        note: [refusal, note].filter(Boolean).join("; ") || null,
        lazyOutMs,
      });
      if (note?.startsWith("upstream")) ctx.health.record(upstream.provider, "reset", `${upstream.provider} (${host(upstream)}) ${note}`);
    }),
    { status: res.status, statusText: res.statusText, headers: outHeaders },
  );
}

/**
 * The request's headers as sent upstream, as header lines: hop-by-hop and self-reported ones
 * dropped, and — for a caller with a grant — every credential header it sent (x-api-key and
 * authorization), so only the one in `set` goes out. `set` replaces any header of its names.
 */
export function headerLines(incoming: Headers, dropCredentials: boolean, set: Record<string, string>): string {
  let s = "";
  // Bun's toJSON copies the headers out in one call; iterating them costs several times more.
  const all = incoming.toJSON() as Record<string, string | string[]>;
  for (const k in all) {
    if (DROPPED.has(k) || k in set || (dropCredentials && (k === "x-api-key" || k === "authorization"))) continue;
    const v = all[k]!;
    if (typeof v === "string") s += `${k}: ${v}\r\n`;
    else for (const one of v) s += `${k}: ${one}\r\n`;
  }
  for (const k in set) s += `${k}: ${set[k]}\r\n`;
  return s;
}

const host = (t: Target) => new URL(t.origin).host;

function pathOnly(target: string): string {
  const q = target.indexOf("?");
  return (q === -1 ? target : target.slice(0, q)).slice(0, 300);
}
