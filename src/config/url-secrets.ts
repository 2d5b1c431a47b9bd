/**
 * URLs in lazy.toml that carry a secret: lazy.toml sits in the checkout, which every task
 * container mounts, so a token in it is readable by every agent. `lazy doctor` warns with the
 * key and line:column, and says which part of the URL looks secret, never the value itself.
 */
import { parse } from "smol-toml";
import { locate, pathKey } from "./positions";

export interface SecretUrl {
  line: number;
  col: number;
  path: string;
  /** Which part looks secret, e.g. "its query parameter token"; never the value. */
  part: string;
}

const SECRET_PARAM = /token|key|sig|secret|auth|pass|pwd|credential|code|hook/i;

/** A path segment that looks like a generated token: long, and mixing letters with digits (or very long). */
function opaque(seg: string): boolean {
  let s = seg;
  try {
    s = decodeURIComponent(seg);
  } catch {}
  if (s.length >= 40 && /^[A-Za-z0-9_\-.~+=]+$/.test(s)) return true;
  return s.length >= 16 && /^[A-Za-z0-9_\-+=]+$/.test(s) && /[0-9]/.test(s) && /[A-Za-z]/.test(s);
}

/** Why this URL looks like it holds a secret, or undefined. */
export function secretPart(value: string): string | undefined {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return undefined;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return undefined;
  if (u.username || u.password) return "its user:password part";
  for (const name of u.searchParams.keys()) if (SECRET_PARAM.test(name)) return `its query parameter ${JSON.stringify(name)}`;
  const segs = u.pathname.split("/").filter(Boolean);
  const i = segs.findIndex(opaque);
  if (i >= 0) return `path segment ${i + 1} (a long opaque token)`;
  return undefined;
}

/** Every string value of the document that is a URL with a secret in it, in file order. */
export function secretUrls(src: string): SecretUrl[] {
  let doc: unknown;
  try {
    doc = parse(src);
  } catch {
    return [];
  }
  const where = locate(src);
  const out: SecretUrl[] = [];
  const walk = (v: unknown, path: (string | number)[]) => {
    if (typeof v === "string") {
      const part = secretPart(v);
      if (part) {
        const k = pathKey(path);
        const at = where.get(k)?.value ?? where.get(k)?.key ?? { line: 1, col: 1 };
        out.push({ ...at, path: k, part });
      }
    } else if (Array.isArray(v)) {
      for (const [i, x] of v.entries()) walk(x, [...path, i]);
    } else if (v && typeof v === "object" && !(v instanceof Date)) for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(doc, []);
  return out.sort((a, b) => a.line - b.line || a.col - b.col);
}
