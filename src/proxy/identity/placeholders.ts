/**
 * Placeholder credentials: what a container holds instead of the real key (docs: "Just-in-time
 * credential injection"). Each mimics the shape of the credential it stands for, because
 * clients pick behaviour from the shape (Pi switches to OAuth style on `sk-ant-oat`, Claude
 * Code picks its small model on `sk-ant-api`) and secret scanners redact by it (docs/wire.md, "Key shapes").
 * Each carries a `lazy` marker so the proxy can tell a dead placeholder (401 with a remedy)
 * from a real credential a host session brought (forwarded as is), and ≥128 random bits so
 * it cannot be guessed.
 */
import { z } from "zod";

export const Shape = z
  .enum([
    "anthropic-api-key",
    "anthropic-oauth",
    "openai",
    "openrouter",
    "cursor",
    "cursor-session",
    "generic",
    // A brokered service's token (src/broker): never redeemed by the model proxy.
    "github",
    "github-app",
    "gitlab",
    "npm",
    "pypi",
    "service",
  ])
  .describe("The kind of credential a placeholder stands for, which decides its shape");
export type Shape = z.infer<typeof Shape>;

const URL_SAFE = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** `n` characters of [A-Za-z0-9_-], 6 random bits each (64 symbols: `byte & 63` is unbiased). */
function urlSafe(n: number): string {
  const buf = crypto.getRandomValues(new Uint8Array(n));
  let out = "";
  for (const b of buf) out += URL_SAFE[b & 63];
  return out;
}

const BASE62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** `n` characters of [A-Za-z0-9] (a byte below 248 taken mod 62: unbiased). */
function base62(n: number): string {
  let out = "";
  while (out.length < n) for (const b of crypto.getRandomValues(new Uint8Array(n))) if (b < 248 && out.length < n) out += BASE62[b % 62];
  return out;
}

function hex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

function base64url(text: string): string {
  return Buffer.from(text).toString("base64url");
}

/** A new placeholder of the given shape. */
export function mint(shape: Shape): string {
  switch (shape) {
    // Claude Code's scanner: `sk-ant-api03-[a-zA-Z0-9_\-]{93}AA`. "lazy-" + 88 random = 93. 528 bits.
    case "anthropic-api-key":
      return `sk-ant-api03-lazy-${urlSafe(88)}AA`;
    // `sk-ant-(?:oat|ort)\d{2}-[\w-]{20,}`; same length as a real setup-token value. 528 bits.
    case "anthropic-oauth":
      return `sk-ant-oat01-lazy-${urlSafe(88)}AA`;
    // `sk-[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,200}` ("T3BlbkFJ" is base64 "OpenAI"). 384 bits.
    case "openai":
      return `sk-proj-lazy-${urlSafe(32)}T3BlbkFJ${urlSafe(32)}`;
    // Real: `sk-or-v1-` + 64 lowercase hex. 256 bits.
    case "openrouter":
      return `sk-or-v1-lazy-${hex(32)}`;
    // Cursor's docs show `key_…` (docs/wire.md, "Key shapes": the prefix is uncertain; nothing validates it locally). 256 bits.
    case "cursor":
      return `key_lazy_${hex(32)}`;
    case "cursor-session":
      return sessionToken();
    case "generic":
      return `lazy-${hex(32)}`;
    // GitHub's `ghp_` + 36 base62 (a PAT) and `ghs_` + 36 (an installation token): 40 characters. 190 bits.
    case "github":
      return `ghp_lazy${base62(32)}`;
    case "github-app":
      return `ghs_lazy${base62(32)}`;
    // GitLab's `glpat-` + 20 or more [\w-]. 132 bits.
    case "gitlab":
      return `glpat-lazy${urlSafe(22)}`;
    // npm's `npm_` + 36 base62. 190 bits.
    case "npm":
      return `npm_lazy${base62(32)}`;
    // PyPI's `pypi-` + a base64url macaroon (long). 384 bits.
    case "pypi":
      return `pypi-lazy${urlSafe(64)}`;
    case "service":
      return `lazy-svc-${hex(32)}`;
  }
}

/**
 * A stand-in for the session JWT Cursor's key exchange returns, so the real one never enters
 * the container. It is JWT-shaped because the CLI may decode it (for `exp`, to know when to
 * re-exchange); `exp` should mirror the real token's. The signature part is 256 random bits.
 */
export function sessionToken(opts: { exp?: number; iat?: number } = {}): string {
  const iat = opts.iat ?? Math.floor(Date.now() / 1000);
  const header = base64url(JSON.stringify({ alg: "HS256", typ: "JWT" }));
  const payload = base64url(
    JSON.stringify({
      lazy: "placeholder",
      sub: "lazy-placeholder",
      type: "api_key_token",
      iat,
      exp: opts.exp ?? iat + 3600,
    }),
  );
  return `${header}.${payload}.${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`;
}

/**
 * The marker sits right after a known prefix, never anywhere in the value: a real key that
 * happened to contain "-lazy-" somewhere must still be forwarded, not 401ed.
 */
const PREFIXES =
  "sk-ant-api03-lazy-|sk-ant-oat01-lazy-|sk-proj-lazy-|sk-or-v1-lazy-|key_lazy_|lazy-|ghp_lazy|ghs_lazy|glpat-lazy|npm_lazy|pypi-lazy";
const MARKED = new RegExp(`^(?:${PREFIXES})[A-Za-z0-9_-]+$`);

/**
 * Anything in a text shaped like one of lazy's placeholders or MCP tokens (`lazy-mcp-…`), or its
 * Cursor session stand-in (a JWT): what a record lazy keeps (src/provenance) must not carry. Wider
 * than `isPlaceholder` on purpose (a word that merely starts like one is cut too); 16 characters
 * at least after a prefix, 32 after the bare `lazy-`, so lazy's own words ("lazy-slug") stay.
 * A JWT is looked for only where a run of its characters begins (one holding "eyJ", and the
 * whole run is cut: a word glued to it goes too): from every "eyJ" of a run with no dot, a
 * pattern starting there walked to the run's end (a 300 KB "eyJeyJ…" tool name took 8.7 s).
 */
export const IN_TEXT = new RegExp(
  `(?:${PREFIXES.replace("|lazy-|", "|")})[A-Za-z0-9_-]{16,}|lazy-[A-Za-z0-9_-]{32,}|(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*?eyJ)[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+`,
  "g",
);

/**
 * A placeholder or an MCP token (`lazy-mcp-…`) anywhere in a text, by its shape: a marker and a
 * random part as long as lazy makes one (PREFIXES, the one list). What lazy keeps of an agent's
 * strings (a model's name: meters/usage.ts) is checked against it; every shape has "lazy" in it,
 * so a caller can test `includes("lazy")` first. IN_TEXT is the wider cut for a text lazy shows
 * or exports (it takes the JWT stand-in too).
 */
export const SECRET_SHAPE = new RegExp(`(?:${PREFIXES})[A-Za-z0-9_-]{22,}`);

/** The shapes that stand for a brokered service's token, never a model credential. */
export const SERVICE_SHAPES: readonly Shape[] = ["github", "github-app", "gitlab", "npm", "pypi", "service"];

/**
 * Whether a presented credential is one of ours. A placeholder whose grant is gone gets a 401
 * naming the remedy instead of being forwarded, where it would read as your key being rejected.
 */
export function isPlaceholder(value: string): boolean {
  if (MARKED.test(value)) return true;
  return isSessionToken(value);
}

function isSessionToken(value: string): boolean {
  if (!value.startsWith("eyJ") || value.length > 4096) return false;
  const parts = value.split(".");
  if (parts.length !== 3 || !parts[1]) return false;
  const payload = parsePayload(parts[1]);
  return payload !== null && payload.lazy === "placeholder";
}

function parsePayload(part: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]+$/.test(part)) return null;
  try {
    const v: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return typeof v === "object" && v !== null ? (v as Record<string, unknown>) : null;
  } catch {
    // A real JWT's payload is JSON too; anything else is simply not ours.
    return null;
  }
}
