/**
 * The request path's model step, after the body and its plugins: which model the request asks
 * for (its body's top-level `model`, on every wire: Anthropic Messages, OpenAI Responses and
 * Chat Completions; docs/wire.md), kept on the audit row, and a profile's pin (`models = [...]`): a
 * request for another model, or one whose model lazy cannot read, is refused with 403 before
 * anything goes upstream.
 *
 * The body is not parsed: a scan of its top level skips each value (strings by native search),
 * so a model named first — as Claude Code, Codex and the SDKs send it — costs a few bytes. Only
 * a pinned profile's requests are scanned to the end, because there the answer must be exact:
 * a key spelt `Model` or `mod\u0065l`, a second `model` (parsers keep the first or the last, and
 * Go's matches keys regardless of case) or a nested one all must not pass for another.
 */
import { modelName } from "../meters";
import type { Call } from "./call";
import { type ModelProblem, modelWhy, refusal } from "./errors";
import type { Wire } from "./surface";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const DECODER = new TextDecoder();
/** Bytes of a model value decoded at most. */
const LONG = 1024;

/** What a body says about its model: every top-level key that reads as `model`, and whether the body was a JSON object at all. */
export interface Asked {
  /** Each such key's value: the string, or null when it was not a string. */
  values: (string | null)[];
  /** The body is not a JSON object lazy could read to its end (or, when not scanned to the end, its start). */
  unreadable: boolean;
}

/**
 * The top-level `model` keys of a JSON body. `all`: scan to the end (every such key, and any
 * malformation); otherwise stop at the first one.
 */
export function askedModels(b: Uint8Array, all: boolean): Asked {
  const out: Asked = { values: [], unreadable: true };
  const buf = Buffer.from(b.buffer, b.byteOffset, b.length);
  const n = buf.length;
  let i = ws(buf, 0);
  if (buf[i] !== 0x7b /* { */) return out;
  i = ws(buf, i + 1);
  if (buf[i] === 0x7d /* } */) return { values: [], unreadable: ws(buf, i + 1) !== n };
  for (;;) {
    if (buf[i] !== QUOTE) return out;
    const keyEnd = stringEnd(buf, i);
    if (keyEnd === -1) return out;
    const isModel = readsAsModel(buf, i, keyEnd);
    i = ws(buf, keyEnd + 1);
    if (buf[i] !== 0x3a /* : */) return out;
    i = ws(buf, i + 1);
    const valueEnd = skipValue(buf, i);
    if (valueEnd === -1) return out;
    if (isModel) {
      // A value far longer than any model name is not decoded whole: its start says enough.
      const long = valueEnd - i > LONG;
      out.values.push(
        buf[i] !== QUOTE ? null : long ? `${DECODER.decode(buf.subarray(i + 1, i + 1 + 200))}…` : stringValue(buf, i, valueEnd),
      );
      if (!all) return { values: out.values, unreadable: false };
    }
    i = ws(buf, valueEnd);
    if (buf[i] === 0x2c /* , */) {
      i = ws(buf, i + 1);
      continue;
    }
    if (buf[i] !== 0x7d) return out;
    out.unreadable = all && ws(buf, i + 1) !== n;
    return out;
  }
}

/** The model a request asked for, as the audit keeps it (null: none, or not a model name). */
export function askedModel(body: Uint8Array | undefined): string | null {
  if (!body?.length) return null;
  const a = askedModels(body, false);
  return a.values.length ? modelName(a.values[0]) : null;
}

/**
 * The pin: with the profile's `models` set, the one model this body asks for must be among
 * them, or the request is refused here (its row written, nothing sent). The asked model goes on
 * the row either way. `undefined`: go on.
 */
export function checkModel(
  call: Call,
  wire: Wire,
  body: Uint8Array | undefined,
  models: readonly string[] | undefined,
  origin: string,
): Response | undefined {
  if (!models) {
    call.base.modelAsked = askedModel(body);
    return undefined;
  }
  // A request without a body (a GET, a cancel) asks no model to serve anything.
  if (!body?.length) return undefined;
  const a = askedModels(body, true);
  const first = a.values[0];
  call.base.modelAsked = a.values.length === 1 && typeof first === "string" ? modelName(first) : null;
  const profile = call.grant?.profile ?? "";
  let problem: ModelProblem | undefined;
  if (a.unreadable) problem = { problem: "unreadable" };
  else if (a.values.length === 0) problem = { problem: "none" };
  else if (a.values.length > 1) problem = { problem: "repeated", count: a.values.length };
  else if (typeof first !== "string") problem = { problem: "not_string" };
  else if (!allows(models, first)) problem = { problem: "not_allowed", model: shown(first) };
  if (!problem) return undefined;
  return call.refuse(
    refusal(wire, { code: "model_refused", profile, models: [...models], ...problem }),
    `model refused: ${modelWhy(problem)} (profile ${profile} allows only ${models.join(", ")})`.slice(0, 500),
    origin,
  );
}

/** An agent's model string as lazy repeats it: printable ASCII only (a terminal reads the rest), 200 characters at most. */
function shown(model: string): string {
  const s = model.replace(/[^\x20-\x7e]/g, "?").replaceAll('"', "'");
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}

/** A pinned model, or its dated snapshot (`claude-sonnet-4-5` allows `claude-sonnet-4-5-20250929`). */
export function allows(models: readonly string[], model: string): boolean {
  return models.includes(model) || (/-\d{8}$/.test(model) && models.includes(model.slice(0, -9)));
}

/** Past JSON whitespace. */
function ws(b: Buffer, i: number): number {
  while (i < b.length) {
    const c = b[i];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
  return i;
}

/** The index of the quote closing the string that opens at `i`, or -1. */
function stringEnd(b: Buffer, i: number): number {
  let q = b.indexOf(QUOTE, i + 1);
  while (q !== -1) {
    let k = q - 1;
    while (b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    q = b.indexOf(QUOTE, q + 1);
  }
  return -1;
}

/** The end (exclusive) of the JSON value at `i`, or -1 when it does not end. */
function skipValue(b: Buffer, i: number): number {
  const n = b.length;
  if (b[i] === QUOTE) {
    const e = stringEnd(b, i);
    return e === -1 ? -1 : e + 1;
  }
  let depth = 0;
  while (i < n) {
    const c = b[i]!;
    if (c === QUOTE) {
      const e = stringEnd(b, i);
      if (e === -1) return -1;
      i = e + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return i; // the end of the object this value is in
      if (--depth === 0) return i + 1;
    } else if (c === 0x2c && depth === 0) return i;
    i++;
  }
  return depth === 0 ? i : -1;
}

/** Whether the key string `b[start..end]` (quotes included) reads as `model` in any case, escapes decoded. */
function readsAsModel(b: Buffer, start: number, end: number): boolean {
  const len = end - start - 1;
  // m, o, d, e, l in either case, compared in place (b | 0x20 folds ASCII letters only to these).
  if (len === 5)
    return (
      (b[start + 1]! | 0x20) === 0x6d &&
      (b[start + 2]! | 0x20) === 0x6f &&
      (b[start + 3]! | 0x20) === 0x64 &&
      (b[start + 4]! | 0x20) === 0x65 &&
      (b[start + 5]! | 0x20) === 0x6c
    );
  if (len < 5 || len > 5 * 6 || !escaped(b, start, end)) return false;
  const key = stringValue(b, start, end + 1);
  return key !== null && key.toLowerCase() === "model";
}

/** Whether `b[start..end)` holds a backslash (looked for there only: the body may be megabytes). */
function escaped(b: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (b[i] === BACKSLASH) return true;
  return false;
}

/** A JSON string's value, `b[start..end)` with its quotes; null when it is not one. */
function stringValue(b: Buffer, start: number, end: number): string | null {
  const raw = DECODER.decode(b.subarray(start, end));
  if (!escaped(b, start, end)) return raw.slice(1, -1);
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === "string" ? v : null;
  } catch {
    return null;
  }
}
