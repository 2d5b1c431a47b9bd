/**
 * Token usage read off a response as it streams past (docs/wire.md, "Where usage and the model are in an answer").
 *
 * `UsageTap` is a side tap on the hot path: the forwarder enqueues each chunk to the client and
 * hands the same bytes here. So it works on bytes, splits lines with native `indexOf`, decodes
 * only the few lines that can carry usage or an error, and never JSON-parses a content delta.
 * A line longer than 1 MiB is dropped unread rather than buffered without bound.
 *
 * Counts are normalised across wires so that total input is always
 * `input + cacheRead + cacheWrite`: Anthropic's `input_tokens` already excludes the cache,
 * OpenAI's includes the cached part, which is subtracted here.
 */
import { z } from "zod";
import { SECRET_SHAPE, type Wire } from "../identity";

export const Counts = z
  .object({
    input: z.number().describe("input tokens billed at the full rate (not read from or written to a cache)"),
    output: z.number().describe("output tokens, reasoning included"),
    cacheRead: z.number().describe("input tokens served from the prompt cache"),
    cacheWrite: z.number().describe("input tokens written to the prompt cache (Anthropic only)"),
  })
  .describe("Token usage of one model call");
export type Counts = z.infer<typeof Counts>;
/** null when the response carried no usage (count_tokens, an error, a cut stream). */
export type Usage = Counts | null;

export type StreamError = { type: string; message: string };

const LF = 10;
const CR = 13;
const MAX_LINE = 1 << 20;
const MAX_JSON = 8 << 20;
const MAX_ERROR_MESSAGE = 500;

/** Named events that can carry usage or an error; every other named event is skipped unread. */
const INTERESTING: ReadonlyArray<[string, Uint8Array]> = [
  "message_start",
  "message_delta",
  "error",
  "response.completed",
  "response.incomplete",
  "response.failed",
].map((name) => [name, bytes(name)]);
/** The current event has a name, and it is not one of the above. */
const SKIP = "";
const EMPTY = new Uint8Array(0);
/** Every decode is one-shot (a whole line or body), so one decoder serves every tap. */
const DECODER = new TextDecoder();

const DATA = bytes("data:");
const EVENT = bytes("event:");
const USAGE_KEY = bytes('"usage"');
const ERROR_KEY = bytes('"error"');

export class UsageTap {
  readonly #wire: Wire;
  #mode: "sse" | "json" | null;

  /** Bytes of the line (SSE) or body (JSON) not yet complete. */
  #parts: Uint8Array[] = [];
  #partsLength = 0;
  /** The current line is being discarded up to its end (too long, or known to be irrelevant). */
  #dropping = false;
  /** The last chunk ended in CR: a LF opening the next one belongs to the same terminator. */
  #afterCR = false;

  /** null: no `event:` line yet in this event; SKIP: a named event we ignore; else its name. */
  #event: string | null = null;
  #data: string[] = [];
  #dataLength = 0;

  #counts: Counts | null = null;
  #model: string | null = null;
  #error: StreamError | null = null;
  #overflowed = false;
  #ended = false;

  /**
   * `contentType` is the response's content-type; `text/event-stream` means SSE, any JSON type
   * means one JSON body, and anything else (or none) is decided by the first non-blank byte.
   */
  constructor(wire: Wire, contentType: string | null = null) {
    this.#wire = wire;
    const ct = contentType?.toLowerCase() ?? "";
    this.#mode = ct.includes("text/event-stream") ? "sse" : ct.includes("json") ? "json" : null;
  }

  /** An error the upstream reported in the body (an `error` event, `response.failed`, an error JSON). */
  get error(): StreamError | null {
    return this.#error;
  }

  /** The model the answer says served it (message_start, a Responses event's response, a whole body), bounded; "" when it named one lazy will not keep; null when it named none. */
  get model(): string | null {
    return this.#model;
  }

  /** True when a line or body exceeded its cap and was skipped, so usage may be missing. */
  get overflowed(): boolean {
    return this.#overflowed;
  }

  push(chunk: Uint8Array): void {
    if (this.#ended || chunk.length === 0) return;
    if (this.#mode === null) {
      this.#mode = sniff(chunk);
      if (this.#mode === null) return; // only whitespace so far: nothing either parser needs
    }
    if (this.#mode === "json") {
      this.#keepBody(chunk);
      return;
    }

    const n = chunk.length;
    let pos = 0;
    if (this.#afterCR) {
      this.#afterCR = false;
      if (chunk[0] === LF) pos = 1;
    }
    // SSE allows CR, LF or CRLF. The next CR is found once per chunk and re-found only after
    // it is passed, so LF-only streams pay one scan per chunk rather than one per line.
    let cr = -2;
    while (pos < n) {
      const lf = chunk.indexOf(LF, pos);
      if (cr !== -1 && cr < pos) cr = chunk.indexOf(CR, pos);
      const end = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf;
      if (end === -1) {
        this.#keepLine(chunk, pos);
        return;
      }
      this.#endLine(chunk, pos, end);
      pos = end + 1;
      if (end === cr) {
        if (pos === n) this.#afterCR = true;
        else if (chunk[pos] === LF) pos++;
      }
    }
  }

  /** The usage in a whole body at once (a non-streamed answer). */
  static of(wire: Wire, contentType: string | null, body: Uint8Array): Usage {
    return UsageTap.read(wire, contentType, body).usage;
  }

  /** The usage and the model served, in a whole body at once (a non-streamed answer). */
  static read(wire: Wire, contentType: string | null, body: Uint8Array): { usage: Usage; model: string | null } {
    const tap = new UsageTap(wire, contentType);
    if ((tap.#mode ?? sniff(body)) === "json" && body.length <= MAX_JSON) {
      // The common case, without copying the body first.
      tap.#ended = true;
      tap.#apply(parseJson(DECODER.decode(body)), true);
      return { usage: tap.#counts, model: tap.#model };
    }
    tap.push(body);
    return { usage: tap.end(), model: tap.#model };
  }

  /** Flush what is pending (a stream may end without its last blank line) and return the usage. */
  end(): Usage {
    if (this.#ended) return this.#counts;
    this.#ended = true;
    if (this.#mode === "json") {
      if (!this.#overflowed) this.#apply(parseJson(DECODER.decode(concat(this.#parts, this.#partsLength))), true);
      this.#parts = [];
      return this.#counts;
    }
    if (this.#partsLength > 0 || this.#dropping) this.#endLine(EMPTY, 0, 0);
    this.#dispatch();
    return this.#counts;
  }

  #keepBody(chunk: Uint8Array): void {
    if (this.#overflowed) return;
    if (this.#partsLength + chunk.length > MAX_JSON) {
      this.#overflowed = true;
      this.#parts = [];
      this.#partsLength = 0;
      return;
    }
    this.#parts.push(chunk.slice());
    this.#partsLength += chunk.length;
  }

  /** The start of a line whose end is in a later chunk. */
  #keepLine(chunk: Uint8Array, from: number): void {
    if (this.#dropping) return;
    // A data line of an event already known to be irrelevant need not be buffered at all.
    if (this.#partsLength === 0 && this.#event === SKIP && startsWith(chunk, from, chunk.length, DATA)) {
      this.#dropping = true;
      return;
    }
    if (this.#partsLength + chunk.length - from > MAX_LINE) {
      this.#overflowed = true;
      this.#dropping = true;
      this.#parts = [];
      this.#partsLength = 0;
      return;
    }
    this.#parts.push(chunk.slice(from));
    this.#partsLength += chunk.length - from;
  }

  #endLine(chunk: Uint8Array, start: number, end: number): void {
    if (this.#dropping) {
      this.#dropping = false;
      this.#parts = [];
      this.#partsLength = 0;
      return;
    }
    if (this.#partsLength === 0) {
      this.#line(chunk, start, end);
      return;
    }
    const length = this.#partsLength + end - start;
    this.#parts.push(chunk.subarray(start, end));
    const line = length > MAX_LINE ? null : concat(this.#parts, length);
    this.#parts = [];
    this.#partsLength = 0;
    if (line === null) this.#overflowed = true;
    else this.#line(line, 0, line.length);
  }

  /** One line, `buf[start, end)`, terminator excluded. Indices rather than subarrays: this runs per line. */
  #line(buf: Uint8Array, start: number, end: number): void {
    if (start === end) {
      this.#dispatch();
      return;
    }
    const first = buf[start];
    if (first === 0x64 /* d */ && startsWith(buf, start, end, DATA)) {
      const event = this.#event;
      if (event === SKIP) return;
      const from = buf[start + 5] === 0x20 ? start + 6 : start + 5;
      // Unnamed events (Chat Completions): only a chunk with a usage or error object counts.
      if (event === null && !carriesUsageOrError(buf, from, end)) return;
      if (this.#dataLength + end - from > MAX_LINE) {
        this.#overflowed = true;
        return;
      }
      this.#data.push(DECODER.decode(buf.subarray(from, end)));
      this.#dataLength += end - from;
      return;
    }
    if (first === 0x65 /* e */ && startsWith(buf, start, end, EVENT)) {
      const from = buf[start + 6] === 0x20 ? start + 7 : start + 6;
      this.#event = interestingEvent(buf, from, end);
    }
    // Comments (`:`), `id:`, `retry:` and unknown fields carry nothing for us.
  }

  #dispatch(): void {
    this.#event = null;
    if (this.#data.length === 0) return;
    const text = this.#data.length === 1 ? (this.#data[0] as string) : this.#data.join("\n");
    this.#data = [];
    this.#dataLength = 0;
    if (text === "[DONE]") return;
    this.#apply(parseJson(text), false);
  }

  #apply(message: unknown, wholeBody: boolean): void {
    if (!isRecord(message)) return;
    switch (message.type) {
      case "message_start": {
        this.#served(record(message.message)?.model);
        const usage = record(record(message.message)?.usage);
        if (usage) this.#counts = anthropicStart(usage);
        return;
      }
      case "message_delta": {
        const usage = record(message.usage);
        if (usage) this.#counts = anthropicDelta(this.#counts, usage);
        return;
      }
      case "response.completed":
      case "response.incomplete":
      case "response.failed": {
        const response = record(message.response);
        this.#served(response?.model);
        const usage = record(response?.usage);
        if (usage) this.#counts = openaiCounts(usage);
        if (message.type === "response.failed") this.#noteError(record(response?.error), "response.failed");
        return;
      }
      case "error": {
        // Anthropic: {type:"error", error:{type,message}}; Responses: {type:"error", code, message}.
        const nested = record(message.error);
        this.#noteError(nested ?? message, "error");
        return;
      }
    }
    // A whole JSON body (non-streamed response) or a Chat Completions chunk: top-level usage.
    this.#served(message.model);
    const usage = record(message.usage);
    if (usage) this.#counts = wholeBody && this.#wire === "anthropic" ? anthropicStart(usage) : openaiCounts(usage);
    const error = record(message.error);
    if (error) this.#noteError(error, "error");
  }

  /**
   * An answer that names a model lazy will not keep (control bytes, spaces, too long) served an
   * unknown model: "" (priced as none, "tokens of no named model"), never the one asked, which an
   * agent chooses and may be cheaper.
   */
  #served(model: unknown): void {
    if (typeof model === "string") this.#model = modelName(model) ?? "";
  }

  #noteError(error: Record<string, unknown> | null, fallback: string): void {
    if (!error) return;
    const type = str(error.type) ?? str(error.code) ?? fallback;
    const message = str(error.message) ?? "";
    this.#error = {
      type: type === "error" ? (str(error.code) ?? type) : type,
      message: message.slice(0, MAX_ERROR_MESSAGE),
    };
  }
}

function anthropicStart(u: Record<string, unknown>): Counts {
  return {
    input: count(u.input_tokens) ?? 0,
    output: count(u.output_tokens) ?? 0,
    cacheRead: count(u.cache_read_input_tokens) ?? 0,
    cacheWrite: count(u.cache_creation_input_tokens) ?? 0,
  };
}

/** The SDK's merge rule: output is cumulative; input and cache fields overwrite when present and non-null. */
function anthropicDelta(prev: Counts | null, u: Record<string, unknown>): Counts {
  const base = prev ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  return {
    input: count(u.input_tokens) ?? base.input,
    output: count(u.output_tokens) ?? base.output,
    cacheRead: count(u.cache_read_input_tokens) ?? base.cacheRead,
    cacheWrite: count(u.cache_creation_input_tokens) ?? base.cacheWrite,
  };
}

/** Responses (`input_tokens`) or Chat Completions (`prompt_tokens`); both count cached tokens inside input. */
function openaiCounts(u: Record<string, unknown>): Counts {
  const chat = "prompt_tokens" in u || "completion_tokens" in u;
  const input = count(chat ? u.prompt_tokens : u.input_tokens) ?? 0;
  const details = record(chat ? u.prompt_tokens_details : u.input_tokens_details);
  const cached = Math.min(count(details?.cached_tokens) ?? 0, input);
  return {
    input: input - cached,
    output: count(chat ? u.completion_tokens : u.output_tokens) ?? 0,
    cacheRead: cached,
    cacheWrite: 0,
  };
}

/** Longest model name kept; a model id is short (`anthropic/claude-opus-4.1`, `qwen2.5-coder:7b`). */
export const MAX_MODEL = 128;

/**
 * A model name as lazy keeps it: a string of printable ASCII without spaces, at most MAX_MODEL
 * long, that holds no placeholder or MCP token (an agent may name its model anything; the audit,
 * the counters and the spans keep this name); else null.
 */
export function modelName(v: unknown): string | null {
  return typeof v === "string" && v.length <= MAX_MODEL && /^[\x21-\x7e]+$/.test(v) && !(v.includes("lazy") && SECRET_SHAPE.test(v))
    ? v
    : null;
}

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function record(v: unknown): Record<string, unknown> | null {
  return isRecord(v) ? v : null;
}

/** Upstream bytes are untrusted: a line that is not JSON is data we ignore, not an exception. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function sniff(chunk: Uint8Array): "sse" | "json" | null {
  for (const b of chunk) {
    if (b === 0x20 || b === 0x09 || b === LF || b === CR) continue;
    return b === 0x7b /* { */ ? "json" : "sse";
  }
  return null;
}

function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

function startsWith(buf: Uint8Array, start: number, end: number, prefix: Uint8Array): boolean {
  if (end - start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (buf[start + i] !== prefix[i]) return false;
  return true;
}

/** The event's name when it is one that can carry usage or an error, else SKIP; compared in place. */
function interestingEvent(buf: Uint8Array, start: number, end: number): string {
  for (const [name, encoded] of INTERESTING) {
    if (end - start === encoded.length && startsWith(buf, start, end, encoded)) return name;
  }
  return SKIP;
}

/**
 * Whether a data line has a `"usage"` or `"error"` key whose value is an object. OpenAI sends
 * `"usage":null` on every chunk, so the key alone is not enough.
 */
function carriesUsageOrError(buf: Uint8Array, start: number, end: number): boolean {
  const view = Buffer.from(buf.buffer, buf.byteOffset + start, end - start);
  return hasObjectKey(view, USAGE_KEY) || hasObjectKey(view, ERROR_KEY);
}

function hasObjectKey(view: Buffer, key: Uint8Array): boolean {
  let i = view.indexOf(key);
  while (i !== -1) {
    let j = i + key.length;
    while (j < view.length && (view[j] === 0x20 || view[j] === 0x3a /* : */ || view[j] === 0x09)) j++;
    if (view[j] === 0x7b /* { */) return true;
    i = view.indexOf(key, i + 1);
  }
  return false;
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0] as Uint8Array;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
