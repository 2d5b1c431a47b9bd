/**
 * A stored credential on its way upstream, for the request path's credential stage
 * (credential.ts), its fallbacks (fallback.ts) and the Cursor route (cursor.ts): the one check
 * of a stored credential (stored, no line break in it), made once per stored value — the proxy
 * thread's table is replaced whole when a credential changes, so a value checked stays checked —
 * the refusal as data (errors.ts words it), and the headers that carry it.
 */
import type { Target } from "../identity";
import { hostOf, OAUTH_BETA, withBeta } from "./address";
import type { Refusal } from "./errors";

export interface Credential {
  /** Headers lazy sets upstream (replacing any the agent sent of these names). Shared: never changed. */
  set: Readonly<Record<string, string>>;
  /** The stored credential's kind (oauth-token, api-key…), null when none went in. */
  kind: string | null;
}

/** A stored credential as the proxy thread holds it. */
export interface Stored {
  value: string;
  kind: string;
}

/** Why a target's credential cannot go upstream: the refusal (errors.ts words it) and the row's note. */
export interface Unsendable {
  refusal: Refusal;
  note: string;
}

// Plain bytes from the upstream, so the usage tap can read the stream (docs/wire.md, "Runtime traps").
export const NONE: Credential = Object.freeze({ set: Object.freeze({ "accept-encoding": "identity" }), kind: null });

/** Per stored credential: whether its value holds a line break (a header would split on it). */
const broken = new WeakMap<object, boolean>();
/** Per stored credential and style: the headers that carry it, when they depend on nothing else. */
const carried = new WeakMap<object, Map<string, Credential>>();

/**
 * The stored credential `name`, or why it cannot go upstream: it is not stored, or it holds a
 * line break. The one check of a stored credential, made once per stored value.
 */
export function stored<C extends Stored>(credentials: { get(name: string): C | undefined }, name: string): C | "missing" | "malformed" {
  const cred = credentials.get(name);
  if (!cred) return "missing";
  let bad = broken.get(cred);
  if (bad === undefined) {
    bad = /[\r\n\0]/.test(cred.value);
    broken.set(cred, bad);
  }
  return bad ? "malformed" : cred;
}

/**
 * What a target's requests carry: its stored credential (null when the target takes none), or
 * the refusal, the same for every route and fallback hop. `profile` names the caller's profile
 * (and the target's host) in it; a fallback hop's refusal names neither (its sentence does).
 */
export function credentialOf<C extends Stored>(
  credentials: { get(name: string): C | undefined },
  upstream: Target,
  profile?: string,
): { cred: C | null } | Unsendable {
  if (upstream.unmapped)
    return {
      refusal: { code: "credential_unmapped", provider: upstream.provider, host: hostOf(upstream), why: upstream.unmapped },
      note: "no credential mapped",
    };
  const name = upstream.credential;
  if (!name) return { cred: null };
  const cred = stored(credentials, name);
  if (cred === "missing")
    return {
      refusal: {
        code: "credential_not_stored",
        credential: name,
        provider: upstream.provider,
        ...(profile === undefined ? {} : { host: hostOf(upstream), profile }),
      },
      note: `credential ${name} missing`,
    };
  if (cred === "malformed") return { refusal: { code: "credential_malformed", credential: name }, note: `credential ${name} malformed` };
  return { cred };
}

/**
 * The headers that carry `cred` to a target of `style`: x-api-key for an Anthropic key, else a
 * bearer token (an Anthropic OAuth token with the beta it needs added to the agent's list).
 */
export function carry(style: Target["style"], cred: Stored, anthropicBeta: () => string | null): Credential {
  const oauth = style === "anthropic" && cred.kind === "oauth-token";
  if (oauth)
    return {
      set: {
        "accept-encoding": "identity",
        authorization: `Bearer ${cred.value}`,
        "anthropic-beta": withBeta(anthropicBeta(), OAUTH_BETA),
      },
      kind: cred.kind,
    };
  // The same for every request with this credential: made once.
  let byStyle = carried.get(cred);
  if (!byStyle) {
    byStyle = new Map();
    carried.set(cred, byStyle);
  }
  let c = byStyle.get(style);
  if (!c) {
    const set: Record<string, string> = { "accept-encoding": "identity" };
    if (style === "anthropic") set["x-api-key"] = cred.value;
    else set.authorization = `Bearer ${cred.value}`;
    c = Object.freeze({ set: Object.freeze(set), kind: cred.kind });
    byStyle.set(style, c);
  }
  return c;
}
