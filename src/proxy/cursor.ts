/**
 * The Cursor route, `/_lazy/cursor/<placeholder>/<upstream path>`: forwarded verbatim to
 * Cursor's API, the one exception to the forwarding surface. cursor-agent puts its key in more
 * than one place, so the placeholder rides in the URL and the real key is substituted wherever
 * the client put it: headers, and bodies that declare ≤ 64 KiB (the bidirectional agent stream
 * is never buffered). The token in the path is never logged; a malformed route is reported by
 * segment count only. `/_lazy/cursor/-/…` carries a host login session, untouched.
 *
 * Beyond the docs (WIRE.md §5): Cursor trades the key for a session token, which every later
 * call carries. The proxy swaps the real session tokens in that answer for placeholders of its
 * own and swaps them back on every later request, so no real Cursor credential reaches the agent.
 */
import type { Server } from "bun";
import * as Placeholders from "./placeholders";
import { errorResponse } from "./errors";
import { send, relay, HOP, type Context } from "./forward";
import type { Row } from "./audit";
import type { Grant } from "./grants";

export const PREFIX = "/_lazy/cursor/";
const MAX_SUBSTITUTED_BODY = 64 * 1024;

interface Session {
  real: string;
  grantToken: string;
  taskId: string | null;
}

/** The session table as the request path sees it (on a proxy thread, it asks the main thread). */
export interface Sessions {
  swapOut(real: string, grant: Grant): Promise<string>;
  pairs(grantToken: string): Promise<[string, string][]>;
}

/** Session placeholders minted for exchanged Cursor tokens: placeholder → the real token. */
export class CursorSessions {
  private byPlaceholder = new Map<string, Session>();

  swapOut(real: string, grant: Grant): string {
    for (const [ph, s] of this.byPlaceholder) if (s.real === real && s.grantToken === grant.token) return ph;
    const exp = jwtExp(real);
    const ph = Placeholders.sessionToken(exp ? { exp } : {});
    this.byPlaceholder.set(ph, { real, grantToken: grant.token, taskId: grant.taskId });
    return ph;
  }

  real(placeholder: string): string | undefined {
    return this.byPlaceholder.get(placeholder)?.real;
  }

  /** All session placeholders of a grant, for substitution in a request. */
  pairs(grantToken: string): [string, string][] {
    const out: [string, string][] = [];
    for (const [ph, s] of this.byPlaceholder) if (s.grantToken === grantToken) out.push([ph, s.real]);
    return out;
  }

  revokeTask(taskId: string): void {
    for (const [ph, s] of this.byPlaceholder) if (s.taskId === taskId) this.byPlaceholder.delete(ph);
  }

  dropGrant(grantToken: string): void {
    for (const [ph, s] of this.byPlaceholder) if (s.grantToken === grantToken) this.byPlaceholder.delete(ph);
  }
}

export async function handleCursor(ctx: Context, sessions: Sessions, req: Request, server: Server<undefined>): Promise<Response> {
  const started = performance.now();
  server.timeout(req, 0);
  const target = req.url.slice(req.url.indexOf("/", req.url.indexOf("//") + 2));
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? "" : target.slice(q);
  const segments = path.split("/");
  const upstream = ctx.targets().cursor();
  const token = segments[3] ?? "";
  const rest = "/" + segments.slice(4).join("/");
  const shownPath = `${PREFIX}…${rest}`.slice(0, 300);
  const row = (grant: Grant | undefined, credential: string | null) => ({
    at: Date.now(),
    taskId: grant?.taskId ?? null,
    taskRef: grant?.taskRef ?? null,
    role: grant?.role ?? null,
    profile: grant?.profile ?? null,
    credential,
    upstream: upstream.origin,
    method: req.method,
    path: shownPath,
  });
  const fail = (status: number, type: string, message: string, grant?: Grant): Response => {
    ctx.audit.record({ ...row(grant, null), path: segments.length < 5 ? `${PREFIX}(malformed)` : shownPath, status, durationMs: performance.now() - started, ttfbMs: null, bytesIn: 0, bytesOut: 0, usage: null, retries: 0, note: message });
    ctx.log.warn(`${status} ${req.method} cursor route: ${message}`);
    return errorResponse("cursor", status, type, message);
  };

  if (segments.length < 5 || !token || segments[4] === undefined)
    return fail(400, "invalid_request_error", `lazy's proxy got a malformed Cursor route (${segments.length - 1} path segments; expected /_lazy/cursor/<placeholder>/<upstream path>).`);

  const headers = new Headers(req.headers);
  for (const h of HOP) headers.delete(h);
  let grant: Grant | undefined;
  let pairs: [string, string][] = [];
  let credential: string | null = null;

  if (token !== "-") {
    grant = ctx.grants.lookup(token);
    if (!grant) return fail(401, "authentication_error", "lazy's proxy does not know this Cursor placeholder: the task's grant is gone. Start the task again: lazy start TASK.");
    const name = upstream.credential ?? "cursor";
    const cred = ctx.credentials.get(name);
    if (!cred) return fail(401, "authentication_error", `lazy's proxy has no credential "${name}" for Cursor: store it with lazy auth set ${name}.`, grant);
    credential = name;
    pairs = [[token, cred.value], ...(await sessions.pairs(grant.token))];
    for (const [k, v] of headers) {
      const swapped = substitute(v, pairs);
      if (swapped !== v) headers.set(k, swapped);
    }
  }

  const declared = Number(req.headers.get("content-length") ?? NaN);
  let body: Uint8Array | ReadableStream<Uint8Array> | undefined;
  if (req.method !== "GET" && req.method !== "HEAD") {
    if (Number.isFinite(declared) && declared <= MAX_SUBSTITUTED_BODY) {
      const raw = new Uint8Array(await req.arrayBuffer());
      body = pairs.length ? substituteBytes(raw, pairs) : raw;
    } else body = req.body ?? undefined; // streamed through, never buffered
  }

  const sent = await send(ctx, upstream.base + rest + query, req, headers, body);
  if (!sent.ok) {
    if (sent.failure === "aborted") return new Response(null, { status: 499 });
    const message = `Cursor (${new URL(upstream.origin).host}${grant ? `, profile ${grant.profile}` : ""}) ${sent.failure === "connect" ? "could not be reached" : sent.failure === "timeout" ? "sent no response headers" : "reset the connection"} ${Math.round(performance.now() - started)} ms into the request`;
    if (sent.failure !== "other") ctx.health.record("Cursor", sent.failure, message);
    return fail(sent.failure === "timeout" ? 504 : 502, "api_error", message, grant);
  }
  const res = sent.res;
  const ttfb = performance.now() - started;
  ctx.health.record("Cursor", res.status >= 500 ? "5xx" : res.status === 429 ? "429" : null);
  const out = res.headers; // end-to-end headers only (upstream.ts)
  const finish = (bytesOut: number, note: string | null) =>
    ctx.audit.record({ ...row(grant, credential), status: res.status, durationMs: performance.now() - started, ttfbMs: ttfb, bytesIn: body instanceof Uint8Array ? body.length : 0, bytesOut, usage: null, retries: sent.retries, note } satisfies Row);

  // The key exchange answers with real session tokens: the agent gets placeholders instead.
  if (grant && rest.endsWith("/auth/exchange_user_api_key") && res.ok) {
    const text = new TextDecoder().decode(await res.bytes());
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(text);
    } catch {
      finish(text.length, "unparsable key exchange answer withheld");
      return errorResponse("cursor", 502, "api_error", "Cursor answered the key exchange with something that is not JSON; lazy's proxy withheld it.");
    }
    for (const k of ["accessToken", "refreshToken", "access_token", "refresh_token", "token"])
      if (typeof json[k] === "string") json[k] = await sessions.swapOut(json[k] as string, grant);
    const swapped = JSON.stringify(json);
    finish(swapped.length, "session tokens swapped for placeholders");
    out.set("content-type", "application/json");
    return new Response(swapped, { status: res.status, headers: out });
  }
  if (!res.hasBody || req.method === "HEAD") {
    res.cancel();
    finish(0, null);
    return new Response(null, { status: res.status, headers: out });
  }
  return new Response(relay(res.stream(), null, finish), { status: res.status, statusText: res.statusText, headers: out });
}

function substitute(value: string, pairs: [string, string][]): string {
  let v = value;
  for (const [from, to] of pairs) if (v.includes(from)) v = v.split(from).join(to);
  return v;
}

function substituteBytes(raw: Uint8Array, pairs: [string, string][]): Uint8Array {
  const text = Buffer.from(raw).toString("latin1");
  let changed = text;
  for (const [from, to] of pairs) if (changed.includes(from)) changed = changed.split(from).join(Buffer.from(to).toString("latin1"));
  return changed === text ? raw : Buffer.from(changed, "latin1");
}

function jwtExp(token: string): number | undefined {
  const part = token.split(".")[1];
  if (!part) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp : undefined;
  } catch {
    return undefined;
  }
}
