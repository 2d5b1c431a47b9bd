/**
 * What never leaves in an evidence bundle (lazy export): a secret lazy knows, and query strings.
 * The secrets are what the rest of lazy cuts: the exact values lazy holds (the task's placeholders
 * and MCP token while they are live, and the keys it stores), each in every form the egress proxy
 * looks for (egress's `formsOf`: as is, base64, hex, reversed) and URL-encoded (a stored private
 * key holds `: + / =`; egress's `formsPattern` makes both), and anything shaped like one of
 * lazy's placeholders or MCP tokens (proxy/identity's IN_TEXT: a revoked one included). Query
 * strings: a URL's (provenance's cutQueries, the one reading), never a `?` of code; a request path
 * (`path`, `url`… keys) loses its query whatever it looks like. Each is replaced by a marker and
 * counted; the manifest says how many a part lost, so a reader knows the part was changed.
 */
import { formsPattern } from "../egress";
import { cutQueries } from "../provenance";
import { Placeholders } from "../proxy";

export const REDACTED = "[redacted]";
export const QUERY_REMOVED = "?[query removed]";

export interface Scrubbed {
  text: string;
  count: number;
}

/** Keys whose string values are request paths or addresses: their query goes, even when it does not look like a URL's. */
const PATHS = new Set(["path", "url", "upstream", "target", "host"]);

/** The cuts of one bundle: the secrets lazy holds now, in all their forms, and the shapes. */
export class Redactor {
  /** Every form of every secret, URL-encoded too (egress's formsPattern: longest first, one pattern); null when there is none. */
  readonly #exact: RegExp | null;

  constructor(secrets: readonly string[]) {
    this.#exact = formsPattern(secrets)?.pattern ?? null;
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
    const q = cutQueries(out, QUERY_REMOVED);
    return { text: q.text, count: count + q.count };
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
