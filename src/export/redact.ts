/**
 * What never leaves in an evidence bundle (lazy export): a credential of any shape lazy knows —
 * its own placeholders and MCP tokens, and the real keys they stand for — and query strings,
 * where a URL or a request path carries a token as often as not. Each is replaced by a marker
 * and counted; the manifest says how many a part lost, so a reader knows the part was changed.
 * Applied to every string of every part (the diff and the agent's commit messages too: an agent
 * that writes its placeholder into a file or a message gets it into no bundle).
 */

export const REDACTED = "[redacted]";
export const QUERY_REMOVED = "?[query removed]";

/** Credential shapes: lazy's placeholders (proxy/identity placeholders.ts, MCP tokens) and the real keys' (docs/wire.md, "Key shapes"). */
const SECRETS: readonly RegExp[] = [
  /sk-ant-[a-z]{3}\d{2}-[A-Za-z0-9_-]{8,}/g,
  /sk-(?:proj|svcacct|admin|or-v1|None)-[A-Za-z0-9_-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /\bkey_lazy_[0-9a-f]{16,}/g,
  /\blazy-(?:mcp-|svc-)?[0-9a-f]{32,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bglpat-[A-Za-z0-9_-]{16,}/g,
  /\bnpm_[A-Za-z0-9]{20,}/g,
  /\bpypi-[A-Za-z0-9_-]{16,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  // A JWT (Cursor's session stand-in among them).
  /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{16,}=*/gi,
];

/** A query string after a URL or a path (`/v1/messages?key=…`, `https://h/p?token=…`). */
const QUERY = /((?:[a-z][a-z0-9+.-]*:\/\/[^\s"'<>?#]*|\/[^\s"'<>?#]*))\?[^\s"'<>#]+/gi;

export interface Scrubbed {
  text: string;
  count: number;
}

/** `text` with every credential shape and query string taken out, and how many were. */
export function scrub(text: string): Scrubbed {
  let count = 0;
  let out = text;
  for (const re of SECRETS)
    out = out.replace(re, (_m, scheme?: unknown) => {
      count++;
      return typeof scheme === "string" && /^(bearer|basic)$/i.test(scheme) ? `${scheme} ${REDACTED}` : REDACTED;
    });
  out = out.replace(QUERY, (_m, before: string) => {
    count++;
    return `${before}${QUERY_REMOVED}`;
  });
  return { text: out, count };
}

/** A request path as a bundle keeps it: without its query, whatever it looks like. */
export function pathOnly(path: string): Scrubbed {
  const q = path.indexOf("?");
  const cut = q === -1 ? { text: path, count: 0 } : { text: path.slice(0, q), count: 1 };
  const s = scrub(cut.text);
  return { text: s.text, count: cut.count + s.count };
}

/** Keys whose string values are request paths or addresses: their query goes, even when it does not look like a URL's. */
const PATHS = new Set(["path", "url", "upstream", "target", "host"]);

/** Every string in `value` (a JSON value) scrubbed; `counter.count` counts what was taken out. */
export function scrubValue(value: unknown, counter: { count: number }, key?: string): unknown {
  if (typeof value === "string") {
    const s = key !== undefined && PATHS.has(key) ? pathOnly(value) : scrub(value);
    counter.count += s.count;
    return s.text;
  }
  if (Array.isArray(value)) return value.map((v) => scrubValue(v, counter));
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubValue(v, counter, k)]));
  return value;
}
