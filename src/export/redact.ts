/**
 * What never leaves in an evidence bundle (lazy export): a secret lazy knows, and query strings.
 * The secrets are what the rest of lazy cuts: the exact values lazy holds (the task's placeholders
 * and MCP token while they are live, and the keys it stores), each in every form the egress proxy
 * looks for (egress's `formsOf`: as is, base64, hex, reversed), and anything shaped like one of
 * lazy's placeholders or MCP tokens (proxy/identity's IN_TEXT: a revoked one included). Query
 * strings: a URL's (provenance's URL_QUERY, the one pattern), never a `?` of code; a request path
 * (`path`, `url`… keys) loses its query whatever it looks like. Each is replaced by a marker and
 * counted; the manifest says how many a part lost, so a reader knows the part was changed.
 */
import { formsOf } from "../egress";
import { URL_QUERY } from "../provenance";
import { Placeholders } from "../proxy";

export const REDACTED = "[redacted]";
export const QUERY_REMOVED = "?[query removed]";

export interface Scrubbed {
  text: string;
  count: number;
}

/** Keys whose string values are request paths or addresses: their query goes, even when it does not look like a URL's. */
const PATHS = new Set(["path", "url", "upstream", "target", "host"]);

/** Shorter than this, a value is no secret worth a search (and would cut ordinary words). */
const MIN_SECRET = 8;

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The cuts of one bundle: the secrets lazy holds now, in all their forms, and the shapes. */
export class Redactor {
  /** Every form of every secret, longest first (a form inside a longer one is cut whole); null when there is none. */
  readonly #exact: RegExp | null;

  constructor(secrets: readonly string[]) {
    const forms = new Set<string>();
    for (const s of secrets) if (s.length >= MIN_SECRET) for (const f of formsOf(s)) forms.add(f.text);
    const sorted = [...forms].sort((a, b) => b.length - a.length);
    // One pattern: a pass over a 30 MB diff with 60 forms takes ~150 ms where 60 `includes` take 600.
    this.#exact = sorted.length ? new RegExp(sorted.map(literal).join("|"), "g") : null;
  }

  /** `text` without the secrets, the placeholder shapes and URL query strings, and how many were taken out. */
  scrub(text: string): Scrubbed {
    let count = 0;
    const cut = () => {
      count++;
      return REDACTED;
    };
    let out = this.#exact ? text.replace(this.#exact, cut) : text;
    out = out.replace(Placeholders.IN_TEXT, cut);
    out = out.replace(URL_QUERY, (_m, before: string) => {
      count++;
      return `${before}${QUERY_REMOVED}`;
    });
    return { text: out, count };
  }

  /** A request path as a bundle keeps it: without its query, whatever it looks like. */
  pathOnly(path: string): Scrubbed {
    const q = path.indexOf("?");
    const cut = q === -1 ? { text: path, count: 0 } : { text: path.slice(0, q), count: 1 };
    const s = this.scrub(cut.text);
    return { text: s.text, count: cut.count + s.count };
  }

  /** Every string in `value` (a JSON value, its keys too) scrubbed; `counter.count` counts what was taken out. */
  value(value: unknown, counter: { count: number }, key?: string): unknown {
    if (typeof value === "string") {
      const s = key !== undefined && PATHS.has(key) ? this.pathOnly(value) : this.scrub(value);
      counter.count += s.count;
      return s.text;
    }
    if (Array.isArray(value)) return value.map((v) => this.value(v, counter));
    if (value && typeof value === "object")
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => {
          const name = this.scrub(k);
          counter.count += name.count;
          return [name.text, this.value(v, counter, k)];
        }),
      );
    return value;
  }
}
