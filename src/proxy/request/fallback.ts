/**
 * [[proxy.fallback]]: when the primary upstream fails before a byte of its answer reached the
 * agent (a connect failure, a reset the one retry did not cure, no headers in time, a 5xx, a
 * 529, or a used-up quota), the request goes to the next fallback whose `on` lists that failure,
 * with that fallback's own credential (looked up per target, never the primary's or the
 * agent's), its `model` in the body where set, and its own forwarding surface. Each hop is an
 * audit row of its own (`hop` 0, 1, …); an error that survives every hop names every party tried
 * and how each failed. A short rate limit is never rerouted. Only requests with a grant are:
 * lazy chooses the credential, so it must be lazy's to choose.
 */
import type { Config, Fallback as FallbackConfig } from "../../config";
import type { Outcome } from "../audit";
import { inferCredential, type Target } from "../identity";
import * as Quota from "../meters";
import { healthKind, providerFailure, type Sent, send, type UpstreamResponse, wayRefusal, wayTo } from "../upstream";
import { hostOf, joinUrl } from "./address";
import { errorResponse, words } from "./errors";
import { carry, credentialOf } from "./stored";
import * as Surface from "./surface";

export interface Hop {
  name: string;
  target: Target;
  model: string | undefined;
  on: ReadonlySet<string>;
}

/** The fallbacks of a config, in order, as targets; `behind` says which requests they back. */
export class Fallbacks {
  private constructor(readonly hops: Hop[]) {}

  static build(config: Pick<Config, "proxy">): Fallbacks {
    return new Fallbacks(
      config.proxy.fallback.map((f: FallbackConfig) => {
        const base = f.endpoint.replace(/\/+$/, "");
        const host = new URL(base).hostname;
        const anthropicHost = host === "anthropic.com" || host.endsWith(".anthropic.com");
        const inferred = inferCredential(base);
        const credential = f.credential === "none" ? null : (f.credential ?? inferred ?? null);
        const target: Target = {
          provider: `fallback ${f.name}`,
          origin: new URL(base).origin,
          base,
          kind: anthropicHost ? "anthropic-primary" : "anthropic-profile",
          wire: "anthropic",
          credential,
          style: anthropicHost ? "anthropic" : "bearer",
        };
        if (f.credential === undefined && inferred === undefined)
          target.unmapped = `set credential = "NAME" (or "none") on the fallback ${f.name} in lazy.toml`;
        // A short rate limit clears in seconds: it is never a reason to take another route.
        return { name: f.name, target, model: f.model, on: new Set(f.on.filter((k) => k !== "429")) };
      }),
    );
  }

  /** The chain behind a request's upstream: the fallbacks back the primary (Anthropic's) upstream only. */
  behind(upstream: Target, primary: Target): Hop[] {
    return this.hops.length && upstream.wire === "anthropic" && upstream.origin === primary.origin ? this.hops : [];
  }
}

const NO_CREDENTIAL = Object.freeze({ "accept-encoding": "identity" });

/** Whether a hop's outcome could be one a fallback takes (checked before any await: most answer). */
export function mayReroute(sent: Sent): boolean {
  if (!sent.ok) return sent.failure !== "aborted" && sent.failure !== "other";
  const s = sent.res.status;
  return s >= 500 || s === 429 || s === 402 || s === 403;
}

/** What a reroute needs of the request path (forward.ts), passed in so neither imports the other. */
export interface Reroute {
  ctx: {
    credentials: { get(name: string): { value: string; kind: string } | undefined };
    health: Quota.Health;
    firstByteTimeoutMs: () => number;
  };
  req: Request;
  target: string;
  body: Uint8Array | undefined;
  /** The header lines sent upstream with `set` added (the agent's credential headers always dropped). */
  lines: (set: Readonly<Record<string, string>>) => string;
  /** The request's audit head: a hop's row names its upstream and credential; the last hop's stay. */
  base: { upstream: string; credential: string | null; profile: string | null; modelAsked?: string | null };
  record: (o: Outcome) => void;
  /** performance.now() of the request's arrival. */
  started: number;
}

/** A hop under way: the upstream asked, how it went, and since when lazy's own time counts for it. */
export interface Leg {
  sent: Sent;
  target: Target;
  credential: string | null;
  credentialKind: string | null;
  /** 0: the upstream the request was meant for; k: the k-th fallback. */
  hop: number;
  /** performance.now() when lazy began on this hop (the request's arrival, or the failure before it). */
  since: number;
  /** performance.now() when it left for the upstream. */
  departed: number;
  /** A hop that could not be tried, in words: it counts as failing the way the hop before it did. */
  skipped?: Failed;
}

/** Where the request path goes on: the hop whose answer the agent gets, or a response of lazy's. */
export type Rerouted = Leg | { response: Response };

interface Failed {
  kind: Quota.FailureKind;
  /** The hop's failure in words, naming the party. */
  sentence: string;
  status: number;
}

/**
 * After the primary's answer head (or failure): whether it failed in a way a fallback takes,
 * and if so the next hops in turn. Nothing has reached the agent yet; the answer that ends the
 * chain (a hop that did not fail, or the primary's failure that no fallback takes) goes on to
 * the request path as it came.
 */
export async function reroute(r: Reroute, chain: Hop[], first: Leg): Promise<Rerouted> {
  let cur = first;
  let next = 0;
  const tried: string[] = [];
  // The status the agent gets when every hop failed: the last upstream's (a hop not tried has none).
  let status = 502;
  const wantsQuota = chain.some((h) => h.on.has("quota"));
  for (;;) {
    const failed = await failureOf(r, cur, wantsQuota);
    r.base.upstream = cur.target.origin;
    r.base.credential = cur.credential;
    if (!failed.failure) return { ...cur, sent: failed.sent };
    const f = failed.failure;
    while (next < chain.length && !chain[next]!.on.has(f.kind)) next++;
    if (next >= chain.length && cur.hop === 0) return { ...cur, sent: failed.sent };
    // This hop is done with: its row, its health, and its answer dropped.
    if (failed.sent.ok) failed.sent.res.cancel();
    if (!cur.skipped) r.ctx.health.record(cur.target.provider, f.kind, f.sentence);
    tried.push(f.sentence);
    if (!cur.skipped) status = f.status;
    const last = next >= chain.length;
    r.record({
      status: f.status,
      ttfbMs: failed.sent.ok ? performance.now() - r.started : null,
      bytesIn: r.body?.length ?? 0,
      retries: failed.sent.retries,
      note: last ? f.sentence : `${f.sentence}; rerouted to fallback ${chain[next]!.name}`,
      hop: cur.hop,
      lazyInMs: cur.skipped ? null : cur.departed - cur.since,
    });
    if (last) return { response: allFailed(tried, status) };

    // The next hop: its own surface, its own credential, its own model.
    const hop = chain[next++]!;
    const since = performance.now();
    const ready = prepare(r, hop);
    const leg = { target: hop.target, credential: hop.target.credential, hop: next, since };
    if ("skip" in ready) {
      const sentence = `fallback ${hop.name} (${hostOf(hop.target)}) was not tried: ${ready.skip}`;
      cur = {
        ...leg,
        sent: { ok: false, failure: "other", detail: sentence, retries: 0 },
        credentialKind: null,
        departed: since,
        skipped: { kind: f.kind, sentence, status: 502 },
      };
      continue;
    }
    // A hop that names its own model asks for that one (its row says so; the answer says what served).
    if (hop.model) r.base.modelAsked = hop.model;
    const departed = performance.now();
    const sent = await send(r.ctx, ready.url, r.req, ready.headers, ready.body);
    cur = { ...leg, sent, credentialKind: ready.kind, departed };
  }
}

/** The URL, headers and body for a hop, or why it cannot be tried. */
function prepare(
  r: Reroute,
  hop: Hop,
): { url: string; headers: string; body: Uint8Array | undefined; kind: string | null } | { skip: string } {
  const t = hop.target;
  if (t.kind === "cursor" || t.wire === "cursor") return { skip: "not an Anthropic-wire endpoint" };
  const verdict = Surface.check(t.kind, r.req.method, r.target, r.req.headers);
  if (!verdict.ok) return { skip: `it does not forward ${verdict.method} ${verdict.path}` };
  // The request path's own lookup and check (stored.ts), worded as errors.ts words it.
  const found = credentialOf(r.ctx.credentials, t);
  if ("refusal" in found) return { skip: words(found.refusal) };
  const way = wayTo(t.origin);
  if (way.via === "refused") return { skip: wayRefusal(way, `fallback ${hop.name}`) };
  let set: Readonly<Record<string, string>> = NO_CREDENTIAL;
  let kind: string | null = null;
  if (found.cred) ({ set, kind } = carry(t.style, found.cred, () => r.req.headers.get("anthropic-beta")));
  return { url: joinUrl(t, verdict.path) + verdict.query, headers: r.lines(set), body: withModel(r.body, hop.model), kind };
}

/**
 * How a hop went, as a fallback's `on` reads it: a failure (kind, sentence, status) or not.
 * A refusal that may be a used-up quota is read (small, whole) to tell; the bytes read are
 * handed on as the answer so the agent still gets it unchanged when nothing takes over.
 */
async function failureOf(r: Reroute, cur: Leg, wantsQuota: boolean): Promise<{ sent: Sent; failure: Failed | null }> {
  if (cur.skipped) return { sent: cur.sent, failure: cur.skipped };
  const who = { provider: cur.target.provider, host: hostOf(cur.target), profile: r.base.profile, credential: cur.credential };
  const sent = cur.sent;
  if (!sent.ok) {
    if (sent.failure === "aborted" || sent.failure === "other") return { sent, failure: null };
    const sentence =
      providerFailure(who, sent.failure, performance.now() - r.started, sent.detail) + (sent.retries ? " (retried once)" : "");
    return { sent, failure: { kind: healthKind(sent.failure), sentence, status: sent.failure === "timeout" ? 504 : 502 } };
  }
  const res = sent.res;
  const answered = (detail?: string) => `${partyOf(who)} answered ${res.status}${detail ? ` (${detail})` : ""}`;
  const kind = Quota.kindOfStatus(res.status);
  if (kind === "5xx" || kind === "529") return { sent, failure: { kind, sentence: answered(), status: res.status } };
  if (!wantsQuota || (res.status !== 429 && res.status !== 402 && res.status !== 403)) return { sent, failure: null };
  // Whole only when small: a refusal's JSON body says whether a quota is used up (quota.ts).
  const json = !!res.headers.get("content-type")?.includes("json");
  if (!res.hasBody || (res.length !== undefined ? res.length > 65_536 : !json)) {
    const verdict = Quota.classify(res.status, res.headers);
    return verdict?.kind === "quota"
      ? { sent, failure: { kind: "quota", sentence: answered(verdict.detail), status: res.status } }
      : { sent, failure: null };
  }
  const bytes = await res.bytes().catch(() => null);
  if (!bytes) return { sent: { ok: false, failure: "reset", detail: "the refusal's body was cut", retries: sent.retries }, failure: null };
  const kept: Sent = { ok: true, res: buffered(res, bytes), retries: sent.retries };
  const verdict = Quota.classify(res.status, res.headers, bytes.length <= 65_536 ? new TextDecoder().decode(bytes) : undefined);
  return verdict?.kind === "quota"
    ? { sent: kept, failure: { kind: "quota", sentence: answered(verdict.detail), status: res.status } }
    : { sent: kept, failure: null };
}

/** The agent's error when every hop failed: each party and how, in order; the last one's status. */
function allFailed(tried: string[], status: number): Response {
  const message = `every upstream failed: ${tried.map((t, i) => `${i + 1}. ${t}`).join("; ")}`;
  const type = status === 529 ? "overloaded_error" : status === 429 ? "rate_limit_error" : "api_error";
  return errorResponse("anthropic", status, type, message, { "x-should-retry": "true" });
}

/** An answer whose body was read whole, handed on as if it had just arrived. */
function buffered(res: UpstreamResponse, bytes: Uint8Array<ArrayBuffer>): UpstreamResponse {
  return {
    status: res.status,
    statusText: res.statusText,
    ok: res.ok,
    headers: res.headers,
    length: bytes.length,
    hasBody: true,
    bytes: async () => bytes,
    stream: () => new Response(bytes).body!,
    cancel: () => {},
  };
}

/** The body with `model` replaced, when the fallback names one and the body is a JSON object. */
export function withModel(body: Uint8Array | undefined, model: string | undefined): Uint8Array | undefined {
  if (!model || !body?.length) return body;
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return body;
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) return body;
  (doc as Record<string, unknown>).model = model;
  return new TextEncoder().encode(JSON.stringify(doc));
}

function partyOf(p: { provider: string; host: string; profile: string | null; credential: string | null }): string {
  const who = [p.host, p.profile ? `profile ${p.profile}` : null, p.credential ? `credential ${p.credential}` : null]
    .filter(Boolean)
    .join(", ");
  return `${p.provider} (${who})`;
}
