/**
 * The Cursor route, `/_lazy/cursor/<placeholder>/<upstream path>`: forwarded verbatim to
 * Cursor's API, the one exception to the forwarding surface. cursor-agent puts its key in more
 * than one place, so the placeholder rides in the URL. The agent is hostile (issue 17), so:
 *
 * - only a placeholder of a cursor-agent profile redeems here, and a pinned one only from its
 *   container's address (caller.ts `grantRefusal`, the request path's own check);
 * - the real key goes only where cursor-agent puts it (docs/wire.md, "Cursor"): `Authorization: Bearer`, and
 *   the `apiKey` field of the key exchange's JSON body. The placeholder's bytes anywhere else (a
 *   prompt saying "repeat: key_lazy_…") stay the placeholder;
 * - whatever a real credential went upstream for, the answer is scrubbed of it (cursor-scrub.ts)
 *   before it reaches the container: whole when its size is known, chunk by chunk otherwise.
 *
 * The token in the path is never logged; a malformed route is reported by segment count only.
 * `/_lazy/cursor/-/…` carries a host login session, untouched and unattributed; a lazy
 * placeholder presented there is refused (a container has nothing else to present).
 *
 * Beyond the docs (docs/wire.md, "Cursor"): Cursor trades the key for a session token, which every later
 * call carries. The proxy swaps the real session tokens in that answer for placeholders of its
 * own and swaps them back in later requests' Authorization header, so no real Cursor
 * credential reaches the agent.
 */
import type { Server } from "bun";
import { pathOf } from "../../util/url";
import { Placeholders } from "../identity";
import { bounded, MAX_BODY, type Pass } from "../listen";
import { kindOfStatus, NOTE } from "../meters";
import { healthKind, providerFailure, relay, send, wayTo } from "../upstream";
import { Call } from "./call";
import { grantRefusal } from "./caller";
import type { Context } from "./context";
import { Scrubber, scrubStream } from "./cursor-scrub";
import type { Sessions } from "./cursor-sessions";
import { NO_RETRY, type Refusal, said } from "./errors";
import { HOP, presented } from "./headers";
import { credentialOf } from "./stored";

export const PREFIX = "/_lazy/cursor/";
/**
 * Request bodies up to this are read whole: the key exchange's (its `apiKey` is swapped), and
 * any other that declares it, so a reset can be retried. Bigger ones (the agent stream) stream.
 */
const MAX_BUFFERED_BODY = 64 * 1024;
/** Answers of known size up to this are scrubbed whole; bigger ones, and streams, chunk by chunk. */
const MAX_SCRUBBED_WHOLE = 8 * 1024 * 1024;

/**
 * `pass` is the request's admission (gate.ts): the listener's idle timeout holds until the body
 * is read (`pass.think()`), and it is released when the answer is done.
 */
export async function handleCursor(
  ctx: Context,
  sessions: Sessions,
  req: Request,
  server: Server<undefined>,
  pass: Pass,
): Promise<Response> {
  const target = pathOf(req.url);
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? "" : target.slice(q);
  const segments = path.split("/");
  let upstream = ctx.targets().cursor();
  const token = segments[3] ?? "";
  const rest = "/" + segments.slice(4).join("/");
  const malformed = segments.length < 5 || !token || segments[4] === undefined;
  // 1. Who is calling: the placeholder rides in the path, which no row or log line shows.
  const call = new Call(ctx, req, server, pass, {
    token: malformed || token === "-" ? undefined : token,
    path: malformed ? `${PREFIX}(malformed)` : `${PREFIX}…${rest}`.slice(0, 300),
  });
  const grant = call.grant;
  /** A failure of lazy's or the upstream's, in words (its row and log line written). */
  const fail = (status: number, message: string, note = message): Response =>
    call.refuse(connectError(status, message), note, upstream.origin);
  /** One of lazy's refusals (errors.ts words it); the note is its words unless given. */
  const refuse = (r: Refusal, note?: string): Response => {
    const [status, message] = said(r);
    return fail(status, message, note ?? message);
  };
  // A caller lazy cannot attribute (a malformed route, no grant, one that does not redeem):
  // counted per minute, source and reason, not a row (audit/refusals.ts).
  const refuseUnknown = (r: Refusal, note: string): Response => call.refuseUnknown(connectError(...said(r)), note);

  if (malformed) return refuseUnknown({ code: "cursor_route_malformed", segments: segments.length - 1 }, "malformed Cursor route");

  const headers = new Headers(req.headers);
  for (const h of HOP) headers.delete(h);
  let credential: string | null = null;
  let key = "";
  /** Real credential → its placeholder: what went upstream, scrubbed from the answer. */
  let secrets: [string, string][] = [];

  if (token === "-") {
    // A host login session rides here untouched. A container holds only placeholders, and none
    // of them is redeemed on this route: one presented here is a container's trick, refused.
    const shown = presented(headers);
    if (shown && Placeholders.isPlaceholder(shown))
      return refuseUnknown({ code: "placeholder_on_host_route" }, "placeholder presented on the host-login route");
  } else {
    if (!grant) return refuseUnknown({ code: "placeholder_unknown", route: "cursor" }, NOTE.grantGone);
    const denied = grantRefusal(req, server, grant, ctx.live);
    if (denied) return refuseUnknown(denied.refusal, denied.note);
    // Only a Cursor profile's placeholder redeems the Cursor key: any other grant (a Claude or a
    // local-model profile) stands for another credential and another upstream.
    const mine = ctx.targets().forProfile(grant.profile);
    if (mine?.kind !== "cursor")
      return refuse(
        { code: "cursor_profile_mismatch", profile: grant.profile, gone: !mine },
        `placeholder of non-Cursor profile ${grant.profile} on the Cursor route`,
      );
    upstream = mine;
    // 4. With which credential: the stage's own lookup and check; Cursor takes one always.
    if (!upstream.credential) return refuse({ code: "cursor_credential_none", profile: grant.profile });
    const found = credentialOf(ctx.credentials, upstream, grant.profile);
    if (!("cred" in found)) return refuse(found.refusal, found.note);
    const cred = found.cred!; // a target that names its credential gets it or a refusal
    credential = upstream.credential;
    call.base.credential = credential;
    key = cred.value;
    const sessionPairs = await sessions.pairs(grant.token);
    secrets = [[cred.value, token], ...sessionPairs.map(([ph, real]): [string, string] => [real, ph])];
    // The key (or a session token) goes only where cursor-agent puts it: Authorization: Bearer.
    const auth = /^bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "")?.[1];
    const real = auth === token ? cred.value : sessionPairs.find(([ph]) => ph === auth)?.[1];
    if (real) headers.set("authorization", `Bearer ${real}`);
    // Plain bytes back, so the answer can be scrubbed: no HTTP nor Connect per-message compression.
    headers.set("accept-encoding", "identity");
    headers.delete("connect-accept-encoding");
    headers.delete("grpc-accept-encoding");
  }

  const way = wayTo(upstream.origin);
  if (way.via === "refused")
    return refuse(
      { code: "plain_through_proxy", to: "Cursor", host: way.host, proxy: way.proxy },
      `refused: plain http:// through the host's proxy ${way.proxy}`,
    );

  const exchange = rest.endsWith("/auth/exchange_user_api_key");
  const declared = Number(req.headers.get("content-length") ?? NaN);
  let body: Uint8Array | ReadableStream<Uint8Array> | undefined;
  if (req.method !== "GET" && req.method !== "HEAD") {
    if (Number.isFinite(declared) && declared > MAX_BODY) return refuse({ code: "body_too_large", declared, limit: MAX_BODY });
    call.unread = false;
    try {
      if (grant && exchange) {
        // The key exchange is the one body cursor-agent puts its key in ({"apiKey": …}).
        const raw = await readAtMost(req, MAX_BUFFERED_BODY);
        if (!raw) return refuse({ code: "body_too_large", declared: null, limit: MAX_BUFFERED_BODY, what: "cursor_exchange" });
        body = withKey(raw, token, key);
      } else if (Number.isFinite(declared) && declared <= MAX_BUFFERED_BODY)
        body = new Uint8Array(await req.arrayBuffer()); // replayable on a reset
      else body = req.body ? bounded(req.body, pass) : undefined; // streamed through, never buffered; thinks once it ends
    } catch {
      // The listener cut a body that stalled past its idle timeout, or the agent left.
      return fail(
        499,
        "the agent's connection closed before its request body was whole (it stalled past the idle timeout, or the agent left)",
      );
    }
  }
  // A streamed body lets the request think when it ends (gate.ts `bounded`); any other is whole now.
  if (!(body instanceof ReadableStream)) pass.think();

  const sent = await send(ctx, upstream.base + rest + query, req, headers, body);
  if (!sent.ok) {
    if (sent.failure === "aborted") return new Response(null, { status: 499 });
    const ms = performance.now() - call.started;
    const host = new URL(upstream.origin).host;
    if (sent.failure === "other") return fail(502, `lazy's proxy failed to send the request to Cursor (${host}): ${sent.detail}`);
    const message = providerFailure(
      { provider: "Cursor", host, profile: grant?.profile ?? null, credential },
      sent.failure,
      ms,
      sent.detail,
    );
    ctx.health.record("Cursor", healthKind(sent.failure), message);
    return fail(sent.failure === "timeout" ? 504 : 502, message);
  }
  const res = sent.res;
  const ttfb = performance.now() - call.started;
  const failure = kindOfStatus(res.status);
  ctx.health.record("Cursor", failure, failure ? `Cursor answered ${res.status}` : undefined);
  const out = res.headers; // end-to-end headers only (upstream.ts)
  const finish = (bytesOut: number, note: string | null) => {
    pass.release();
    call.record({
      status: res.status,
      ttfbMs: ttfb,
      bytesIn: body instanceof Uint8Array ? body.length : 0,
      bytesOut,
      retries: sent.retries,
      note,
    });
  };
  // Whatever answer follows, finish() releases the pass: a relayed one when it ends.
  pass.held = true;
  const withheld = (note: string, message: string): Response => {
    res.cancel();
    finish(0, note);
    return connectError(502, message);
  };

  if (grant && !/^(identity)?$/i.test((out.get("content-encoding") ?? "").trim()))
    return withheld(
      "compressed answer withheld",
      `Cursor answered compressed (${out.get("content-encoding")}) although lazy's proxy asked for plain bytes; the proxy cannot check it for credentials, so it withheld it.`,
    );
  if (grant && !/^(identity)?$/i.test((out.get("connect-content-encoding") ?? "").trim()))
    return withheld(
      "compressed stream withheld",
      `Cursor answered with compressed messages (${out.get("connect-content-encoding")}) although lazy's proxy asked for none; the proxy cannot check them for credentials, so it withheld them.`,
    );

  // The key exchange answers with real session tokens: the agent gets placeholders instead.
  if (grant && exchange && res.ok) {
    const text = new TextDecoder().decode(await res.bytes());
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text);
    } catch {
      finish(text.length, "unparsable key exchange answer withheld");
      return connectError(502, "Cursor answered the key exchange with something that is not JSON; lazy's proxy withheld it.");
    }
    for (const k of ["accessToken", "refreshToken", "access_token", "refresh_token", "token"])
      if (typeof json[k] === "string") json[k] = await sessions.swapOut(json[k] as string, grant);
    // Anything else in it that is real (an echoed key, a token under another name) is scrubbed too.
    const all = [...secrets, ...(await sessions.pairs(grant.token)).map(([ph, real]): [string, string] => [real, ph])];
    const swapped = new Scrubber(all, true).all(new TextEncoder().encode(JSON.stringify(json)));
    finish(swapped.length, "session tokens swapped for placeholders");
    out.set("content-type", "application/json");
    return new Response(swapped, { status: res.status, headers: out });
  }
  if (!res.hasBody || req.method === "HEAD") {
    res.cancel();
    finish(0, null);
    return new Response(null, { status: res.status, headers: out });
  }
  if (!grant) return new Response(relay(res.stream(), null, finish), { status: res.status, statusText: res.statusText, headers: out });

  // A real credential went upstream: none may come back. A bounded answer is scrubbed whole.
  const scrubber = new Scrubber(secrets, Scrubber.isText(out.get("content-type")));
  const scrubbed = (bytesOut: number, note: string | null) => {
    if (scrubber.replaced)
      ctx.log.warn(
        `Cursor's answer to ${req.method} ${call.base.path} (profile ${grant.profile}) carried a real Cursor credential ${scrubber.replaced} time(s); lazy's proxy replaced it before the agent got it`,
      );
    finish(
      bytesOut,
      scrubber.replaced ? [note, `${scrubber.replaced} real credential(s) in the answer replaced`].filter(Boolean).join("; ") : note,
    );
  };
  if (!out.get("content-type")?.includes("event-stream") && res.length !== undefined && res.length <= MAX_SCRUBBED_WHOLE) {
    const bytes = await res.bytes().catch(() => null);
    if (bytes) {
      const clean = scrubber.all(bytes);
      scrubbed(clean.length, null);
      return new Response(clean, { status: res.status, statusText: res.statusText, headers: out });
    }
  }
  return new Response(relay(scrubStream(res.stream(), scrubber), null, scrubbed), {
    status: res.status,
    statusText: res.statusText,
    headers: out,
  });
}

/** Cursor speaks Connect: its errors are `{code, message}` with the HTTP status. */
function connectError(status: number, message: string): Response {
  return Response.json(
    { code: CONNECT_CODES[status] ?? (status >= 500 ? "unavailable" : "unknown"), message },
    { status, headers: NO_RETRY },
  );
}

const CONNECT_CODES: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  413: "resource_exhausted",
  502: "unavailable",
  504: "deadline_exceeded",
};

/** The request body, or null when it runs past `max` bytes (whatever its framing). */
async function readAtMost(req: Request, max: number): Promise<Uint8Array | null> {
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return null;
    }
    parts.push(value);
  }
  return Buffer.concat(parts);
}

/**
 * The key exchange body with the real key in its `apiKey` field, when that field holds exactly
 * this placeholder. Anything else is forwarded as sent: the placeholder's bytes elsewhere (in a
 * prompt, a name) stay the placeholder.
 */
function withKey(raw: Uint8Array, placeholder: string, key: string): Uint8Array {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(raw));
  } catch {
    return raw;
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return raw;
  const obj = json as Record<string, unknown>;
  if (obj.apiKey !== placeholder) return raw;
  return new TextEncoder().encode(JSON.stringify({ ...obj, apiKey: key }));
}
