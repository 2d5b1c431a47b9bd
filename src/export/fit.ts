/**
 * Fitting a part of the bundle to the room left in its byte budget (bundle.ts): the diff by
 * whole lines, a JSON part by the first items of its lists, each scrubbed once (redact.ts) and
 * measured as it sits in the document, the daemon's thread let go every MiB or so.
 */
import type { Redactor } from "./redact";

/** What a part takes of the document: its text as a JSON string, escapes and quotes included. */
export const inDocument = (text: string) => Buffer.byteLength(JSON.stringify(text));

/** A JSON part is scrubbed and measured this much at a time (its items' bytes), the daemon's thread let go between. */
const SLICE = 1024 * 1024;
/** The daemon's thread let go: whatever waits (an API request) runs before the next piece. */
export const letGo = () => new Promise<void>((r) => setImmediate(r));

/** The diff is scrubbed and measured this much at a time, the daemon's thread let go between (a hostile diff is tens of MiB). */
export const CHUNK = 1024 * 1024;
/** Where a chunk may end: at whitespace, a line's end or a space in a line (one line can be megabytes). */
const BREAK = /\s/g;

/** The diff scrubbed and within `room`: whole, or its first lines that fit (never a line cut in two); `redacted` counts in what is kept. */
export async function fitDiff(
  raw: string,
  room: number,
  redact: Redactor,
): Promise<{ text: string; redacted: number; cut: boolean; taken: number }> {
  /** What is kept so far: pieces of `raw` (from..to), each scrubbed, its size in the document and its redactions. */
  const kept: { from: number; to: number; text: string; size: number; count: number }[] = [];
  let used = 2; // the string's quotes in the document
  const keep = (from: number, to: number, s: { text: string; count: number }, size = inDocument(s.text) - 2) => {
    kept.push({ from, to, text: s.text, size, count: s.count });
    used += size;
  };
  const done = (cut: boolean) => ({
    text: kept.map((k) => k.text).join(""),
    redacted: kept.reduce((n, k) => n + k.count, 0),
    cut,
    taken: used,
  });
  for (let at = 0; at < raw.length; ) {
    // A chunk ends at a line's end, or at a space inside a line of megabytes: no secret form,
    // shape or URL query holds whitespace, so no cut spans one and each piece's scrub is the same.
    BREAK.lastIndex = Math.min(at + CHUNK, raw.length);
    const br = BREAK.exec(raw);
    const end = br ? br.index + 1 : raw.length;
    const s = redact.scrub(raw.slice(at, end));
    const size = inDocument(s.text) - 2;
    if (used + size <= room) {
      keep(at, end, s, size);
      at = end;
      await letGo();
      continue;
    }
    // The chunk does not fit: its lines, one by one, while they do.
    let since = 0;
    for (let from = at; from < end; ) {
      const eol = raw.indexOf("\n", from);
      const stop = eol === -1 || eol >= end ? end : eol + 1;
      const line = redact.scrub(raw.slice(from, stop));
      const n = inDocument(line.text) - 2;
      if (used + n > room) break;
      keep(from, stop, line, n);
      since += stop - from;
      from = stop;
      if (since >= CHUNK / 4) {
        since = 0;
        await letGo();
      }
    }
    // Never a line cut in two: back to the last line end kept (a piece of a long line is dropped,
    // and the piece holding that line end scrubbed again up to it, so its count is what is kept).
    while (kept.length && !kept.at(-1)!.text.endsWith("\n")) {
      const last = kept.pop()!;
      used -= last.size;
      const nl = raw.lastIndexOf("\n", last.to - 1);
      if (nl >= last.from) {
        keep(last.from, nl + 1, redact.scrub(raw.slice(last.from, nl + 1)));
        break;
      }
    }
    return done(true);
  }
  return done(false);
}

/** What a JSON part takes at least: `{"cut": true}` alone. */
const CUT_ONLY = '{\n  "cut": true\n}\n';
/** The least room each kind of part takes in the document, whatever the budget: kept free for the parts still to come. */
export const LEAST = { json: inDocument(CUT_ONLY), diff: inDocument("") };

const asText = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

/**
 * A JSON part within `room`: its lists shortened (their first items kept, the same share of
 * each) until it fits, the part marked `cut`; `{"cut": true}` when none of it does. Each item is
 * scrubbed and serialized once, as it sits in the part (two levels in), and what the part takes
 * with its first k items is summed from those sizes: the part is put together once, from the
 * pieces, in exactly the text JSON.stringify(part, null, 2) gives.
 */
export async function fitJson(
  value: Record<string, unknown>,
  lists: string[],
  room: number,
  redact: Redactor,
): Promise<{ text: string; redacted: number; kept: string | null; taken: number }> {
  const arrays = lists.map((k) => (Array.isArray(value[k]) ? (value[k] as unknown[]) : []));
  const empty = Object.fromEntries(lists.map((k) => [k, []]));
  const scrubbed = (v: Record<string, unknown>) => {
    const counter = { count: 0 };
    return { text: asText(redact.value(v, counter)), redacted: counter.count };
  };
  // The part around its lists (as whole, and as cut), and each item: its text in the part, its size there, what it lost.
  const whole = scrubbed({ ...value, ...empty });
  const cut = scrubbed({ ...value, ...empty, cut: true });
  const pieces: string[][] = [];
  const sizes: number[][] = []; // sizes[j][i]: the first i items of list j, in the document
  const lost: number[][] = []; // lost[j][i]: what the first i items of list j lost to the scrub
  let since = 0;
  for (const items of arrays) {
    const p: string[] = [];
    const s = [0];
    const l = [0];
    for (const item of items) {
      const counter = { count: 0 };
      const piece = (JSON.stringify(redact.value(item, counter), null, 2) ?? "null").replaceAll("\n", "\n    ");
      p.push(piece);
      s.push(s.at(-1)! + inDocument(piece) - 2);
      l.push(l.at(-1)! + counter.count);
      since += piece.length;
      if (since > SLICE) {
        since = 0;
        await letGo();
      }
    }
    pieces.push(p);
    sizes.push(s);
    lost.push(l);
  }
  // `[` + each item after a line break and four spaces (an escaped \n is 2 bytes) + commas between + a line break, two spaces, `]`, in place of `[]`.
  const grown = (j: number, k: number) => (k === 0 ? 0 : 7 * k + 3 + sizes[j]![k]!);
  const taken = (base: string, kept: number[]) => inDocument(base) + kept.reduce((n, k, j) => n + grown(j, k), 0);
  const build = (base: string, kept: number[]) => {
    let text = base;
    lists.forEach((key, j) => {
      const k = kept[j]!;
      if (!k) return;
      const at = `\n  ${JSON.stringify(key)}: []`;
      const i = text.indexOf(at); // a top-level key's line: no string in JSON holds a line break
      text = `${text.slice(0, i)}\n  ${JSON.stringify(key)}: [\n    ${pieces[j]!.slice(0, k).join(",\n    ")}\n  ]${text.slice(i + at.length)}`;
    });
    return text;
  };
  const lostIn = (base: number, kept: number[]) => kept.reduce((n, k, j) => n + lost[j]![k]!, base);
  const all = arrays.map((a) => a.length);
  const size = taken(whole.text, all);
  if (size <= room) return { text: build(whole.text, all), redacted: lostIn(whole.redacted, all), kept: null, taken: size };
  // The most of each list that fits, the same share of each: k of the longest, and as many of the others.
  const longest = Math.max(0, ...all);
  const share = (k: number) => all.map((n) => (longest ? Math.floor((n * k) / longest) : 0));
  let lo = 0;
  let hi = longest;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (taken(cut.text, share(mid)) <= room) lo = mid;
    else hi = mid - 1;
  }
  const kept = share(lo);
  if (kept.some((k) => k > 0))
    return {
      text: build(cut.text, kept),
      redacted: lostIn(cut.redacted, kept),
      taken: taken(cut.text, kept),
      kept: lists.map((k, j) => `${kept[j]!.toLocaleString("en-US")} of ${all[j]!.toLocaleString("en-US")} ${k}`).join(", "),
    };
  const bare = scrubbed(Object.fromEntries([...Object.entries(value).filter(([k]) => !lists.includes(k)), ["cut", true]]));
  if (inDocument(bare.text) <= room) return { ...bare, kept: `none of its ${lists.join(", ")}`, taken: inDocument(bare.text) };
  return { text: CUT_ONLY, redacted: 0, kept: "nothing", taken: LEAST.json };
}
