/**
 * What each wire forwards. The list is part of lazy's source, not a config knob, so widening
 * the proxy's forwarding surface is a reviewable code change (docs: "What the proxy forwards").
 *
 * Matching is exact and refuses rather than normalises. The path is compared segment by
 * segment with a fixed list, and anything a lenient upstream router could read differently
 * from us — percent-encoding (single or double), dot segments, doubled slashes, backslashes,
 * `;` matrix parameters, a trailing slash, a fragment, an absolute-form target — is refused
 * outright. No real client sends those shapes, so refusing costs nothing; normalising would
 * mean agreeing byte for byte with every upstream's decoder, which is exactly the gap an
 * agent would use to reach Ollama's /api/pull or /api/delete.
 *
 * The forwarder must build the upstream URL from the returned `path` + `query` by plain
 * concatenation onto the upstream base (never `new URL(path, base)`: `//host/...` there is a
 * network-path reference). Note that Bun.serve's `req.url` is already WHATWG-normalised
 * (`/v1/x/../messages` arrives as `/v1/messages`, `\` as `/`); checking and forwarding that
 * same string keeps what we vet and what we send identical.
 */
import type { UpstreamKind, Wire } from "../identity";

export type { UpstreamKind, Wire };

type Method = "GET" | "HEAD" | "POST" | "DELETE";
type Route = { readonly method: Method; readonly path: string };

export type Allowed = { ok: true; path: string; query: string };
/** `reason` is for the audit trail and logs; the client sees only method, path and the list. */
export type Refused = { ok: false; method: string; path: string; allowed: string[]; reason: string };
export type Verdict = Allowed | Refused;

const route = (method: Method, path: string): Route => ({ method, path });

const anthropicInference = [route("POST", "/v1/messages"), route("POST", "/v1/messages/count_tokens")];
// Claude Code probes `HEAD /api/hello` (2.1.332) or `HEAD <base>` (2.1.197) with no credential.
const anthropicProbes = [route("HEAD", "/"), route("HEAD", "/api/hello")];
const models = [route("GET", "/v1/models"), route("GET", "/v1/models/{id}")];

const surfaces: Record<UpstreamKind, readonly Route[]> = {
  "anthropic-primary": [...anthropicInference, ...models, ...anthropicProbes],
  // A profile upstream is usually a model server you run, whose admin API (/api/pull,
  // /api/delete, /api/create) shares the inference port. Inference and probes only; no model
  // listing either, since there it is an inventory of your server rather than a catalogue.
  "anthropic-profile": [...anthropicInference, ...anthropicProbes],
  openai: [
    route("POST", "/v1/chat/completions"),
    route("POST", "/v1/responses"),
    // Codex's remote compaction.
    route("POST", "/v1/responses/compact"),
    // The documented follow-ups on a stored response.
    route("GET", "/v1/responses/{id}"),
    route("DELETE", "/v1/responses/{id}"),
    route("POST", "/v1/responses/{id}/cancel"),
    route("GET", "/v1/responses/{id}/input_items"),
    ...models,
    route("HEAD", "/"),
  ],
};

const templates: Record<UpstreamKind, ReadonlyArray<{ method: Method; segments: string[] }>> = {
  "anthropic-primary": compile(surfaces["anthropic-primary"]),
  "anthropic-profile": compile(surfaces["anthropic-profile"]),
  openai: compile(surfaces.openai),
};

function compile(routes: readonly Route[]) {
  return routes.map((r) => ({ method: r.method, segments: r.path.slice(1).split("/") }));
}

/** The wire an upstream of this kind speaks, which decides the refusal's error shape. */
export function wireOf(kind: UpstreamKind): Wire {
  return kind === "openai" ? "openai" : "anthropic";
}

/** Human list for refusals and docs: `["POST /v1/messages", …]`. */
export function allowed(kind: UpstreamKind): string[] {
  return surfaces[kind].map((r) => `${r.method} ${r.path}`);
}

// Frameworks (Express method-override, Rails, some gateways) honour these to rewrite the
// method or URL after routing; we route on what we see, so their presence is refused.
const overrideHeaders = ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url"];

const MAX_TARGET = 8192;
const MAX_PATH = 2048;
/** A `{id}` segment: a response id, a model id like `claude-sonnet-4-5` or `llama3:8b`. */
const ID_SEGMENT = /^[A-Za-z0-9._:-]+$/;
/** Everything any listed path can contain; all else (%, \, ;, @, !, …) is refused up front. */
const PATH_CHARS = /^[A-Za-z0-9._:/-]+$/;
/** Printable ASCII without space: what a well-formed request target is made of. */
const TARGET_CHARS = /^[\x21-\x7e]*$/;

/**
 * Decide whether `method` on `target` (the request's path and query, e.g.
 * `/v1/messages?beta=true`) is forwarded to an upstream of `kind`. Methods compare
 * case-sensitively, as HTTP says (`post` is not `POST`). The query is opaque and kept as is;
 * it never changes the route.
 */
export function check(kind: UpstreamKind, method: string, target: string, headers: Headers): Verdict {
  for (const name of overrideHeaders) if (headers.has(name)) return refused(kind, method, target, `method or URL override header ${name}`);
  // The same few targets come by the thousand: an allowed one is decided once (bounded; a miss
  // decides anew). Not one with a query: an agent varying it would only churn the memory, and a
  // query may carry what the memory should not keep.
  const key = `${kind} ${method} ${target}`;
  const seen = decided.get(key);
  if (seen) return seen;
  const verdict = decide(kind, method, target);
  if (verdict.ok && target.length <= MAX_REMEMBERED && !target.includes("?")) {
    if (decided.size >= REMEMBERED) decided.clear();
    decided.set(key, verdict);
  }
  return verdict;
}

/** Allowed verdicts by kind, method and target; frozen, as they are handed out again. */
const decided = new Map<string, Readonly<Allowed>>();
const REMEMBERED = 256;
const MAX_REMEMBERED = 512;

function refused(kind: UpstreamKind, method: string, target: string, reason: string): Refused {
  return { ok: false, method: shown(method, 24), path: shown(pathPart(target), 200), allowed: allowed(kind), reason };
}

/** `check`, once the override headers are known to be absent. */
function decide(kind: UpstreamKind, method: string, target: string): Verdict {
  const refuse = (reason: string): Refused => refused(kind, method, target, reason);
  if (target.length > MAX_TARGET) return refuse(`request target longer than ${MAX_TARGET} characters`);
  if (!target.startsWith("/")) return refuse("not an origin-form path (absolute URL, authority or *)");
  if (!TARGET_CHARS.test(target)) return refuse("control, space or non-ASCII character in the request target");
  if (target.includes("#")) return refuse("fragment in the request target");

  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? "" : target.slice(q);

  const problem = pathProblem(path);
  if (problem) return refuse(problem);

  const segments = path.slice(1).split("/");
  let pathKnown = false;
  for (const t of templates[kind]) {
    if (!matches(t.segments, segments)) continue;
    if (t.method === method) return Object.freeze({ ok: true, path, query });
    pathKnown = true;
  }
  return refuse(pathKnown ? "method not forwarded on this path" : "path not forwarded to this upstream");
}

/** Why a path is not canonical, or null when it is. Each case is one an upstream may read differently. */
function pathProblem(path: string): string | null {
  if (path.length > MAX_PATH) return `path longer than ${MAX_PATH} characters`;
  // Any `%` at all, rather than decode-until-stable: no listed path needs one, and refusing
  // covers single, double and mixed encodings of `/`, `\`, `.`, NUL alike.
  if (path.includes("%")) return "percent-encoding in the path";
  if (path.includes("\\")) return "backslash in the path";
  if (path.includes(";")) return "matrix parameter (;) in the path";
  if (path.includes("//")) return "empty segment (//) in the path";
  const segments = path.slice(1).split("/");
  if (segments.some((s) => s === "." || s === "..")) return "dot segment in the path";
  // `/v1/messages/` is refused, not trimmed: routers disagree on it (gin redirects, others
  // 404 or route it elsewhere), and the one client that strips slashes does so itself.
  if (path !== "/" && path.endsWith("/")) return "trailing slash in the path";
  if (!PATH_CHARS.test(path)) return "character outside [A-Za-z0-9._:/-] in the path";
  return null;
}

function matches(template: string[], segments: string[]): boolean {
  if (template.length !== segments.length) return false;
  for (let i = 0; i < template.length; i++) {
    const t = template[i] as string;
    const s = segments[i] as string;
    if (t === "{id}") {
      if (!ID_SEGMENT.test(s) || s === "." || s === "..") return false;
    } else if (t !== s) return false;
  }
  return true;
}

function pathPart(target: string): string {
  const q = target.indexOf("?");
  return q === -1 ? target : target.slice(0, q);
}

/** A refused method or path as it can safely be echoed: controls escaped, length bounded. */
function shown(value: string, max: number): string {
  let out = "";
  for (const ch of value) {
    const c = ch.codePointAt(0) as number;
    out += c < 0x20 || c === 0x7f ? `%${c.toString(16).toUpperCase().padStart(2, "0")}` : ch;
    if (out.length > max) return `${out.slice(0, max)}…`;
  }
  return out;
}
