/**
 * Which of the agent's headers go upstream, written once for the request path, its fallbacks,
 * its plugins and the Cursor route: never hop-by-hop ones, never a header that once named a task
 * or role (attribution is the grant's alone), never the agent's own credential headers when it
 * has a grant (only the one lazy sets goes out). And the credential the headers present:
 * x-api-key, else a bearer token.
 */
import { HOP_BY_HOP } from "../upstream";

// Hop-by-hop headers never cross a proxy; host is ours, not the upstream's (docs/wire.md, "Runtime traps").
export const HOP = ["host", ...HOP_BY_HOP];
// Headers that once named a task or role: attribution is the grant's alone, and these never go upstream.
const SELF_REPORTED = ["x-lazy-role", "x-lazy-task-id"];
export const DROPPED = new Set([...HOP, ...SELF_REPORTED, "accept-encoding"]);

/**
 * The request's headers as sent upstream, as header lines: hop-by-hop and self-reported ones
 * dropped, and — for a caller with a grant — every credential header it sent (x-api-key and
 * authorization), so only the one in `set` goes out. `set` replaces any header of its names.
 */
export function headerLines(incoming: Headers, dropCredentials: boolean, set: Readonly<Record<string, string>>): string {
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

/** The bearer token of an Authorization header, if any. */
export function presentedBearer(headers: Headers): string | undefined {
  const auth = headers.get("authorization");
  return auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, "").trim() : undefined;
}

/** What the client presented as its credential, if anything. */
export function presented(headers: Headers): string | undefined {
  const key = headers.get("x-api-key");
  if (key) return key.trim();
  return presentedBearer(headers);
}
