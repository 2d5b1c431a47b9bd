/**
 * The shapes of a secret lazy gave out (a placeholder, an MCP token) that the egress proxy looks
 * for in what a container sends: the secret as is, and as an agent told to "encode it first"
 * would send it — base64 (standard and URL-safe, at each of the three byte offsets it can sit at
 * inside a longer encoded text), hex (lower and upper case) and reversed. Each form is a plain
 * substring, so one `includes` per form finds it anywhere: in the head, across two of a
 * body's chunks (the scan carries the longest form's length over, server.ts), and, for the
 * head, across header fields (`joined`: their values run together, so a secret cut in two
 * header values is whole again).
 *
 * Not covered, and not claimed: a secret cut into pieces with other bytes between them, spread
 * over two requests or connections, encrypted, or inside a CONNECT tunnel (TLS, never read).
 */

/** How a form was made: words for the refusal. */
export type Disguise = "as is" | "base64" | "hex" | "reversed";

export interface Form {
  text: string;
  as: Disguise;
}

/** Every form of `token`, distinct, each long enough to stand for it alone. */
export function formsOf(token: string): Form[] {
  const bytes = Buffer.from(token, "utf8");
  const out = new Map<string, Disguise>([[token, "as is"]]);
  // Inside a longer base64 text the token starts at byte offset 0, 1 or 2 of a 3-byte group:
  // from the first whole group that holds only its bytes to the last, the characters are fixed.
  for (let skip = 0; skip < 3; skip++) {
    const whole = Math.floor((bytes.length - skip) / 3) * 3;
    if (whole < 24) continue;
    const core = bytes.subarray(skip, skip + whole);
    for (const enc of ["base64", "base64url"] as const) {
      const text = core.toString(enc);
      if (!out.has(text)) out.set(text, "base64");
    }
  }
  out.set(bytes.toString("hex"), "hex");
  out.set(bytes.toString("hex").toUpperCase(), "hex");
  out.set([...token].reverse().join(""), "reversed");
  return [...out].map(([text, as]) => ({ text, as }));
}

/**
 * Every form of every one of `secrets` (formsOf's, and URL-encoded where that differs) in one
 * pattern (global), longest first so a form inside a longer one is cut whole; null when there is none. What lazy keeps or sends elsewhere (a span,
 * an evidence bundle) is cut with it: one pass over a 30 MB text with 60 forms takes ~150 ms
 * where 60 `includes` take 600. A secret shorter than `min` is left out (it would cut words).
 */
export function formsPattern(secrets: Iterable<string>, min = 8): { pattern: RegExp; shortest: number } | null {
  const forms = new Set<string>();
  for (const s of secrets)
    if (s.length >= min) {
      for (const f of formsOf(s)) forms.add(f.text);
      // As a URL's query or a form sends it (a stored private key holds `: + / =`); the same text when it is URL-safe.
      // Not in formsOf: the egress proxy's refusals name each of those forms' disguise.
      if (s.isWellFormed()) {
        const enc = encodeURIComponent(s);
        // Escapes in either case, "/" left as it is (Python's quote), and JSON's "\/".
        for (const e of [enc, enc.replace(/%2F/g, "/")]) forms.add(e).add(e.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
        forms.add(s.replaceAll("/", "\\/"));
      }
    }
  if (!forms.size) return null;
  const sorted = [...forms].sort((a, b) => b.length - a.length);
  return {
    pattern: new RegExp(sorted.map((f) => f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g"),
    shortest: sorted.at(-1)!.length,
  };
}

/** A head's header values run together in order (names, colons and line ends left out). */
export function joined(head: string): string {
  let s = "";
  for (const line of head.split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) s += line.slice(colon + 1).trim();
  }
  return s;
}
