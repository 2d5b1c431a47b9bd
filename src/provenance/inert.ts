/**
 * Nothing secret in a record: every string lazy puts in one goes through `inert` — the task's
 * own secrets (its placeholders and MCP token, exactly), anything shaped like one of lazy's
 * (proxy/identity's IN_TEXT), and the query string of any URL (tokens ride there) are cut — and
 * is bounded. The agent's text (tool inputs, file names) stays text: the CLI shows it through
 * visible(), JSON escapes the rest.
 */
import { Placeholders } from "../proxy";

export const SECRET = "[secret]";
/** A URL's query string (`$1` is the URL before it): only a scheme://… URL's, never a `?` in code. The scheme bounded: unbounded, a long "a.a.a…" file name made each try scan to its end. */
export const QUERY = /(\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s?#"'<>`]*)\?[^\s#"'<>`]*/gi;

export interface Cut {
  /** Exact strings to cut wherever they appear (the task's grants). */
  secrets: readonly string[];
}

/** `text` with secrets and URL query strings cut, at most `max` characters (the cut said). */
export function inert(text: string, cut: Cut, max = 4_000): string {
  // Cut first (with room for a secret across the edge), so the patterns never walk a huge text.
  let s = text.length > max + 512 ? text.slice(0, max + 512) : text;
  for (const secret of cut.secrets) if (secret.length >= 8) s = s.split(secret).join(SECRET);
  s = s.replace(Placeholders.IN_TEXT, SECRET).replace(QUERY, "$1?…");
  const more = s.length - max + Math.max(0, text.length - (max + 512));
  return s.length > max ? `${s.slice(0, max)}… (cut: ${more.toLocaleString("en-US")} more characters)` : s;
}

/** Every string in a JSON value made inert (object keys too); hashes and numbers are left as they are. */
export function inertDeep<T>(value: T, cut: Cut, max = 4_000): T {
  if (typeof value === "string") return inert(value, cut, max) as T;
  if (Array.isArray(value)) return value.map((v) => inertDeep(v, cut, max)) as T;
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [inert(k, cut, 200), inertDeep(v, cut, max)])) as T;
  return value;
}
