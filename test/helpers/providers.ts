/**
 * Fake model providers for tests: real HTTP/1.1 servers on 127.0.0.1, port 0, that speak each
 * provider's wire (docs/wire.md, "Where usage and the model are in an answer": Anthropic Messages,
 * OpenAI Responses and Chat Completions; "Cursor") and record every request they receive. Never a fetch mock: the proxy under test
 * must reach them over TCP, so resets, silences and cut streams are the real thing.
 *
 * Built on node:http rather than Bun.serve because a test needs the socket: to reset it (RST)
 * before any byte, to hold the response before its headers, and to number connections.
 *
 * Usage numbers round-trip through the proxy's normalisation (src/proxy/meters/usage.ts): Anthropic
 * reports `usage.input` as `input_tokens` and the cache separately; OpenAI reports
 * `input_tokens`/`prompt_tokens` = input + cacheRead with `cached_tokens` = cacheRead, and has no
 * field for cacheWrite.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

export interface Received {
  method: string;
  /** The request target up to `?`, raw (not decoded, not normalised). */
  path: string;
  /** `?…` as sent, or "" (URL.search style). */
  query: string;
  /** Lowercased names; a repeated header is joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** The body as received, for binary (Connect/proto) requests. */
  bytes: Uint8Array;
  /** Date.now() when the whole request had arrived. */
  at: number;
  /** Which TCP connection carried it, 1-based, numbered by first request since the last reset(). */
  connection: number;
}

export type Behavior =
  | { kind: "ok" }
  | { kind: "status"; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: "reset-first" }
  | { kind: "reset" }
  | { kind: "hang" }
  | { kind: "silent-then-stream"; firstByteDelayMs: number; gapMs: number }
  | { kind: "reset-mid-stream" };

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface Reply {
  text: string;
  toolUse?: { name: string; input: unknown };
  /**
   * Anthropic only: tool calls one after another in one turn — the k-th answer whose request
   * carries k tool results asks for `steps[k]`; once they are all answered, `text`.
   */
  steps?: { name: string; input: unknown }[];
}

export interface MockProvider {
  url: string;
  port: number;
  received: Received[];
  /**
   * Applies to every request the mock gets, whatever the path. Setting `reset-first` (again)
   * re-arms it: the next request is reset, later ones answer ok.
   */
  behavior: Behavior;
  /** Added to every 2xx answer. */
  rateLimitHeaders: Record<string, string>;
  /** Added to every answer, errors included. */
  extraHeaders: Record<string, string>;
  reply: Reply;
  usage: Usage;
  /** A path prefix the provider serves its API under (OpenRouter's `/api`); `received` keeps the full path. */
  prefix: string;
  /** Clears received, behavior back to ok, connection numbering restarts. reply/usage/headers stay. */
  reset(): void;
  /** reset(), then answer with `reply` from now on (a test's next script for the model). */
  answer(reply: Reply): void;
  /** Resolves with `received` once it holds at least `count` requests; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export interface CursorMockProvider extends MockProvider {
  /** The session JWT the key exchange hands out; every RPC must carry it as Bearer. */
  realSessionToken: string;
  realRefreshToken: string;
  /** When set, the exchange accepts only this key (header, and body `apiKey` if present). null: any non-empty key. */
  apiKey: string | null;
  /**
   * An upstream that repeats what it got, as a model asked to "repeat: …" would, and as an error
   * that quotes the credential does: AvailableModels (JSON) answers `{echo: <body>, authorization:
   * <header>}`; RunSSE one data frame with the request body, then one with the Authorization
   * header; a refused key exchange names the key it got. Off by default.
   */
  echo: boolean;
}

export const DEFAULT_REPLY_TEXT = "Hello from lazy's mock provider.";
export const DEFAULT_USAGE: Usage = { input: 21, output: 13, cacheRead: 8, cacheWrite: 5 };

export async function anthropic(): Promise<MockProvider> {
  return new AnthropicMock().start();
}

export async function openai(): Promise<MockProvider> {
  return new OpenAIMock().start();
}

/**
 * An Ollama server (docs/wire.md, "Ollama"): Anthropic's /v1/messages, OpenAI's /v1/chat/completions and
 * its own /api/* (admin and native routes answered, so a test can prove one never arrived).
 */
export async function ollama(): Promise<MockProvider> {
  return new OllamaMock().start();
}

export async function cursor(): Promise<CursorMockProvider> {
  return new CursorMock().start();
}

// ---------------------------------------------------------------------------------------------
// The server and the behaviors, shared by every wire.

/** What a route answers; `chunks` are written one by one (an SSE event each, or one JSON body). */
interface Answer {
  status: number;
  headers: Record<string, string>;
  chunks: (string | Uint8Array)[];
}

interface Pending {
  timer: ReturnType<typeof setTimeout>;
  cancel: () => void;
}

abstract class Mock implements MockProvider {
  url = "";
  port = 0;
  received: Received[] = [];
  rateLimitHeaders: Record<string, string> = {};
  extraHeaders: Record<string, string> = {};
  reply: Reply = { text: DEFAULT_REPLY_TEXT };
  usage: Usage = { ...DEFAULT_USAGE };
  /** A path prefix the provider serves its API under (OpenRouter's `/api`); `received` keeps the full path. */
  prefix = "";

  #behavior: Behavior = { kind: "ok" };
  #resetFirstArmed = false;
  #server: Server;
  #sockets = new Set<Socket>();
  #connections = new WeakMap<Socket, { epoch: number; n: number }>();
  #epoch = 0;
  #connectionCount = 0;
  #pending = new Set<Pending>();
  #waiters = new Set<() => void>();
  #closing: Promise<void> | null = null;

  constructor() {
    this.#server = createServer((req, res) => this.#onRequest(req, res));
    this.#server.on("connection", (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on("close", () => this.#sockets.delete(socket));
      socket.on("error", () => {}); // a client going away mid-answer is a test scenario, not a failure
    });
    this.#server.on("clientError", (_err, socket: Socket) => socket.destroy());
  }

  protected abstract route(r: Received): Answer;
  /** The wire's own error body for a bare `{kind:"status"}`. */
  protected abstract errorBody(status: number, message: string): unknown;

  get behavior(): Behavior {
    return this.#behavior;
  }

  set behavior(b: Behavior) {
    this.#behavior = b;
    this.#resetFirstArmed = b.kind === "reset-first";
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", () => resolve());
    });
    const address = this.#server.address();
    if (address === null || typeof address === "string") throw new Error("mock provider: no TCP address");
    this.port = address.port;
    this.url = `http://127.0.0.1:${this.port}`;
    return this;
  }

  reset(): void {
    this.received.length = 0;
    this.behavior = { kind: "ok" };
    this.#epoch++;
    this.#connectionCount = 0;
  }

  answer(reply: Reply): void {
    this.reset();
    this.reply = reply;
  }

  waitFor(count: number, timeoutMs = 5_000): Promise<Received[]> {
    if (this.received.length >= count) return Promise.resolve(this.received);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.received.length < count) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(this.received);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`mock provider ${this.url}: ${this.received.length} of ${count} requests after ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.add(check);
    });
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      for (const p of this.#pending) {
        clearTimeout(p.timer);
        p.cancel();
      }
      this.#pending.clear();
      for (const socket of this.#sockets) socket.destroy();
      this.#server.closeAllConnections();
      this.#server.close(() => resolve());
    });
    return this.#closing;
  }

  #connectionOf(socket: Socket): number {
    const known = this.#connections.get(socket);
    if (known && known.epoch === this.#epoch) return known.n;
    const n = ++this.#connectionCount;
    this.#connections.set(socket, { epoch: this.#epoch, n });
    return n;
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const parts: Buffer[] = [];
    req.on("data", (c: Buffer) => parts.push(c));
    req.on("error", () => {});
    req.on("end", () => {
      const bytes = new Uint8Array(Buffer.concat(parts));
      const target = req.url ?? "/";
      const q = target.indexOf("?");
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
      }
      const r: Received = {
        method: req.method ?? "GET",
        path: q === -1 ? target : target.slice(0, q),
        query: q === -1 ? "" : target.slice(q),
        headers,
        body: new TextDecoder().decode(bytes),
        bytes,
        at: Date.now(),
        connection: this.#connectionOf(req.socket),
      };
      this.received.push(r);
      for (const w of [...this.#waiters]) w();
      void this.#answer(r, req, res);
    });
  }

  async #answer(r: Received, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const b = this.#behavior;
    if (b.kind === "reset" || (b.kind === "reset-first" && this.#resetFirstArmed)) {
      this.#resetFirstArmed = false;
      req.socket.resetAndDestroy();
      return;
    }
    if (b.kind === "hang") return; // the socket stays open until the client leaves or close()
    if (b.kind === "status") {
      const body = b.body === undefined ? this.errorBody(b.status, `mock provider answered ${b.status}`) : b.body;
      const text = typeof body === "string" ? body : JSON.stringify(body);
      const type = typeof body === "string" && !looksJson(body) ? "text/plain" : "application/json";
      return this.#write(r, res, b, { status: b.status, headers: { "content-type": type, ...b.headers }, chunks: [text] });
    }
    const routed = this.prefix && r.path.startsWith(`${this.prefix}/`) ? { ...r, path: r.path.slice(this.prefix.length) } : r;
    return this.#write(r, res, b, this.route(routed));
  }

  async #write(r: Received, res: ServerResponse, b: Behavior, a: Answer): Promise<void> {
    let gone = false;
    res.on("close", () => (gone = true));
    const headers = { ...a.headers, ...(a.status < 300 ? this.rateLimitHeaders : {}), ...this.extraHeaders };
    const chunks = r.method === "HEAD" ? [] : a.chunks;
    const start = (first: (string | Uint8Array)[]) => {
      res.writeHead(a.status, headers);
      if (first.length === 0) res.flushHeaders();
      for (const c of first) res.write(c);
    };

    if (b.kind === "silent-then-stream") {
      if (!(await this.#sleep(b.firstByteDelayMs)) || gone) return;
      const [first, rest] = halves(chunks);
      start(first);
      if (!(await this.#sleep(b.gapMs)) || gone) return;
      for (const c of rest) res.write(c);
      res.end();
      return;
    }
    if (b.kind === "reset-mid-stream") {
      start(halves(chunks)[0]);
      // Let the bytes reach the client before the RST, which would otherwise discard them.
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      if (!(await this.#sleep(50)) || gone) return;
      res.socket?.resetAndDestroy();
      return;
    }
    start([]);
    for (const c of chunks) res.write(c);
    res.end();
  }

  /** Resolves true after `ms`, or false when close() cut it short. */
  #sleep(ms: number): Promise<boolean> {
    if (this.#closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const p: Pending = {
        timer: setTimeout(() => {
          this.#pending.delete(p);
          resolve(true);
        }, ms),
        cancel: () => resolve(false),
      };
      this.#pending.add(p);
    });
  }
}

/** The first half of the chunks (at least one) and the rest; a single chunk is cut in two. */
function halves(chunks: (string | Uint8Array)[]): [(string | Uint8Array)[], (string | Uint8Array)[]] {
  if (chunks.length === 1) {
    const only = chunks[0]!;
    const mid = Math.floor(only.length / 2);
    return typeof only === "string" ? [[only.slice(0, mid)], [only.slice(mid)]] : [[only.subarray(0, mid)], [only.subarray(mid)]];
  }
  const cut = Math.ceil(chunks.length / 2);
  return [chunks.slice(0, cut), chunks.slice(cut)];
}

// ---------------------------------------------------------------------------------------------
// Small shared pieces.

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseBody(r: Received): Obj | null {
  try {
    const v: unknown = JSON.parse(r.body);
    return isObj(v) ? v : null;
  } catch {
    return null;
  }
}

function looksJson(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Answer {
  const text = JSON.stringify(body);
  return { status, headers: { "content-type": "application/json", ...headers }, chunks: [text] };
}

function stream(events: string[]): Answer {
  return { status: 200, headers: { "content-type": "text/event-stream", "cache-control": "no-cache" }, chunks: events };
}

function sse(event: string | null, data: unknown): string {
  return `${event === null ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
}

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
function rid(n: number): string {
  let s = "";
  for (const b of crypto.getRandomValues(new Uint8Array(n))) s += ALNUM[b % ALNUM.length];
  return s;
}

/** Up to three pieces, cut on code points so no delta splits a character. */
function pieces(s: string): string[] {
  const cps = Array.from(s);
  if (cps.length === 0) return [];
  const size = Math.ceil(cps.length / 3);
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(""));
  return out;
}

const now = () => Math.floor(Date.now() / 1000);

// ---------------------------------------------------------------------------------------------
// Anthropic Messages (docs/wire.md: "Paths the clients call", "Error bodies", "Where usage and the model are in an answer").

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

class AnthropicMock extends Mock {
  protected errorBody(status: number, message: string): unknown {
    const type = ANTHROPIC_ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message: status === 529 ? "Overloaded" : message }, request_id: `req_${rid(24)}` };
  }

  protected route(r: Received): Answer {
    const { method, path } = r;
    if (method === "HEAD" && (path === "/" || path === "/api/hello")) return { status: 200, headers: {}, chunks: [] };
    // Ollama admin routes: answered, so a test can prove such a request never arrived.
    if (path === "/api/pull" || path === "/api/delete" || path === "/api/create") return json(200, { status: "success" });
    if (method === "POST" && path === "/v1/messages/count_tokens") return json(200, { input_tokens: this.usage.input });
    if (method === "GET" && path === "/v1/models") {
      const data = [
        { type: "model", id: "claude-sonnet-4-5-20250929", display_name: "Claude Sonnet 4.5", created_at: "2025-09-29T00:00:00Z" },
        { type: "model", id: "claude-haiku-4-5-20251001", display_name: "Claude Haiku 4.5", created_at: "2025-10-01T00:00:00Z" },
      ];
      return json(200, { data, has_more: false, first_id: data[0]!.id, last_id: data[1]!.id });
    }
    if (method === "POST" && path === "/v1/messages") return this.messages(r);
    return json(404, this.errorBody(404, `${method} ${path} not found`));
  }

  private messages(r: Received): Answer {
    const body = parseBody(r);
    if (!body) return json(400, this.errorBody(400, "request body is not a JSON object"));
    const model = typeof body.model === "string" ? body.model : "claude-sonnet-4-5";
    const u = this.usage;
    const last = Array.isArray(body.messages) ? (body.messages.at(-1) as unknown) : undefined;
    const answered = isObj(last) && Array.isArray(last.content) && last.content.some((b: unknown) => isObj(b) && b.type === "tool_result");
    // Tool results since the person's last message (a resumed session carries the turns before).
    const all: unknown[] = Array.isArray(body.messages) ? body.messages : [];
    const isResult = (b: unknown) => isObj(b) && b.type === "tool_result";
    const asked = all.findLastIndex((m) => isObj(m) && m.role === "user" && !(Array.isArray(m.content) && m.content.some(isResult)));
    const results = all
      .slice(asked + 1)
      .reduce((n: number, m) => n + (isObj(m) && Array.isArray(m.content) ? m.content.filter(isResult).length : 0), 0);
    const tool = this.reply.steps ? (this.reply.steps[results] ?? null) : this.reply.toolUse && !answered ? this.reply.toolUse : null;
    const id = `msg_01${rid(22)}`;
    const toolId = `toolu_01${rid(22)}`;
    const stopReason = tool ? "tool_use" : "end_turn";
    const usage = {
      input_tokens: u.input,
      cache_creation_input_tokens: u.cacheWrite,
      cache_read_input_tokens: u.cacheRead,
      output_tokens: u.output,
      cache_creation: { ephemeral_5m_input_tokens: u.cacheWrite, ephemeral_1h_input_tokens: 0 },
      service_tier: "standard",
    };

    if (body.stream !== true) {
      const content = tool
        ? [{ type: "tool_use", id: toolId, name: tool.name, input: tool.input }]
        : [{ type: "text", text: this.reply.text }];
      return json(200, { id, type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage });
    }

    const message = {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: Math.min(1, u.output) },
    };
    const events = [sse("message_start", { type: "message_start", message })];
    const block = tool ? { type: "tool_use", id: toolId, name: tool.name, input: {} } : { type: "text", text: "" };
    events.push(sse("content_block_start", { type: "content_block_start", index: 0, content_block: block }));
    events.push(sse("ping", { type: "ping" }));
    const deltas = tool
      ? pieces(JSON.stringify(tool.input ?? {})).map((partial_json) => ({ type: "input_json_delta", partial_json }))
      : pieces(this.reply.text).map((text) => ({ type: "text_delta", text }));
    for (const delta of deltas) events.push(sse("content_block_delta", { type: "content_block_delta", index: 0, delta }));
    events.push(sse("content_block_stop", { type: "content_block_stop", index: 0 }));
    events.push(
      sse("message_delta", {
        type: "message_delta",
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: u.output },
      }),
    );
    events.push(sse("message_stop", { type: "message_stop" }));
    return stream(events);
  }
}

// ---------------------------------------------------------------------------------------------
// OpenAI Responses and Chat Completions (docs/wire.md: "Paths the clients call", "Where usage and the model are in an answer", "Error bodies").

const OPENAI_ERRORS: Record<number, { type: string; code: string | null; message: string }> = {
  401: { type: "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided: sk-proj-****MOCK." },
  403: { type: "invalid_request_error", code: "unsupported_country_region_territory", message: "Forbidden." },
  404: { type: "invalid_request_error", code: null, message: "Not found." },
  429: { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached. Please try again in 1.5s." },
  500: { type: "server_error", code: null, message: "The server had an error while processing your request." },
  503: { type: "server_error", code: null, message: "The engine is currently overloaded, please try again later." },
};

class OllamaMock extends AnthropicMock {
  protected override route(r: Received): Answer {
    const { method, path } = r;
    if (method === "POST" && path === "/v1/chat/completions") {
      const body = parseBody(r);
      const model = typeof body?.model === "string" ? body.model : "llama3";
      const u = this.usage;
      return json(200, {
        id: `chatcmpl-${rid(12)}`,
        object: "chat.completion",
        created: now(),
        model,
        choices: [{ index: 0, message: { role: "assistant", content: this.reply.text }, finish_reason: "stop" }],
        usage: { prompt_tokens: u.input, completion_tokens: u.output, total_tokens: u.input + u.output },
      });
    }
    if ((method === "GET" || method === "HEAD") && path === "/") return json(200, "Ollama is running");
    if (path === "/api/version") return json(200, { version: "0.14.0" });
    if (path.startsWith("/api/") && path !== "/api/hello") return json(200, { status: "success" });
    return super.route(r);
  }
}

class OpenAIMock extends Mock {
  protected errorBody(status: number, message: string): unknown {
    const known = OPENAI_ERRORS[status];
    return {
      error: {
        message: known?.message ?? message,
        type: known?.type ?? (status >= 500 ? "server_error" : "invalid_request_error"),
        param: null,
        code: known?.code ?? null,
      },
    };
  }

  protected route(r: Received): Answer {
    const { method, path } = r;
    if (method === "HEAD" && path === "/") return { status: 200, headers: {}, chunks: [] };
    if (method === "GET" && path === "/v1/models") {
      const data = ["gpt-5", "gpt-5-codex"].map((id) => ({ id, object: "model", created: 1754000000, owned_by: "openai" }));
      return json(200, { object: "list", data });
    }
    if (method === "POST" && path === "/v1/responses") return this.responses(r);
    if (method === "POST" && path === "/v1/chat/completions") return this.chat(r);
    return json(404, this.errorBody(0, `Invalid URL (${method} ${path})`));
  }

  /**
   * What a Responses and a Chat Completions answer share: the model, the tool call to make (none
   * once the last of `items` is its result, as `answers` tells) with its arguments, the prompt's tokens.
   */
  private turn(body: Obj, items: unknown, answers: (last: Obj) => boolean) {
    const last = Array.isArray(items) ? (items.at(-1) as unknown) : undefined;
    const tool = this.reply.toolUse && !(isObj(last) && answers(last)) ? this.reply.toolUse : null;
    return {
      model: typeof body.model === "string" ? body.model : "gpt-5",
      tool,
      args: tool ? JSON.stringify(tool.input ?? {}) : "",
      prompt: this.usage.input + this.usage.cacheRead,
    };
  }

  private responses(r: Received): Answer {
    const body = parseBody(r);
    if (!body) return json(400, this.errorBody(400, "We could not parse the JSON body of your request."));
    const { model, tool, args, prompt: input } = this.turn(body, body.input, (last) => last.type === "function_call_output");
    const u = this.usage;
    const usage = {
      input_tokens: input,
      input_tokens_details: { cached_tokens: u.cacheRead },
      output_tokens: u.output,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: input + u.output,
    };
    const created = {
      id: `resp_${rid(32)}`,
      object: "response",
      created_at: now(),
      status: "in_progress",
      error: null,
      incomplete_details: null,
      model,
      output: [] as unknown[],
      parallel_tool_calls: true,
      tool_choice: "auto",
      tools: [],
      store: false,
      usage: null as unknown,
    };
    const text = this.reply.text;
    const item = tool
      ? { id: `fc_${rid(32)}`, type: "function_call", status: "completed", name: tool.name, arguments: args, call_id: `call_${rid(24)}` }
      : {
          id: `msg_${rid(32)}`,
          type: "message",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text, annotations: [] }],
        };
    const completed = { ...created, status: "completed", output: [item], usage };

    if (body.stream !== true) return json(200, completed);

    let seq = 0;
    const ev = (type: string, data: Obj) => sse(type, { type, sequence_number: seq++, ...data });
    const events = [ev("response.created", { response: created }), ev("response.in_progress", { response: created })];
    const at = { item_id: item.id, output_index: 0 };
    if (tool) {
      events.push(ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", arguments: "" } }));
      for (const delta of pieces(args)) events.push(ev("response.function_call_arguments.delta", { ...at, delta }));
      events.push(ev("response.function_call_arguments.done", { ...at, name: tool.name, arguments: args }));
    } else {
      const part = { type: "output_text", text: "", annotations: [] };
      events.push(ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } }));
      events.push(ev("response.content_part.added", { ...at, content_index: 0, part }));
      for (const delta of pieces(text)) events.push(ev("response.output_text.delta", { ...at, content_index: 0, delta, logprobs: [] }));
      events.push(ev("response.output_text.done", { ...at, content_index: 0, text, logprobs: [] }));
      events.push(ev("response.content_part.done", { ...at, content_index: 0, part: { ...part, text } }));
    }
    events.push(ev("response.output_item.done", { output_index: 0, item }));
    events.push(ev("response.completed", { response: completed }));
    return stream(events);
  }

  private chat(r: Received): Answer {
    const body = parseBody(r);
    if (!body) return json(400, this.errorBody(400, "We could not parse the JSON body of your request."));
    const { model, tool, args, prompt } = this.turn(body, body.messages, (last) => last.role === "tool");
    const u = this.usage;
    const usage = {
      prompt_tokens: prompt,
      completion_tokens: u.output,
      total_tokens: prompt + u.output,
      prompt_tokens_details: { cached_tokens: u.cacheRead },
      completion_tokens_details: { reasoning_tokens: 0 },
    };
    const id = `chatcmpl-${rid(29)}`;
    const created = now();
    const callId = `call_${rid(24)}`;
    const finish = tool ? "tool_calls" : "stop";

    if (body.stream !== true) {
      const message = tool
        ? {
            role: "assistant",
            content: null,
            refusal: null,
            tool_calls: [{ id: callId, type: "function", function: { name: tool.name, arguments: args } }],
          }
        : { role: "assistant", content: this.reply.text, refusal: null };
      return json(200, {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
        usage,
      });
    }

    const includeUsage = isObj(body.stream_options) && body.stream_options.include_usage === true;
    const chunk = (choices: unknown[], extra: Obj = {}) =>
      sse(null, { id, object: "chat.completion.chunk", created, model, choices, ...(includeUsage ? { usage: null } : {}), ...extra });
    const choice = (delta: Obj, finish_reason: string | null = null) => ({ index: 0, delta, logprobs: null, finish_reason });
    const events: string[] = [];
    if (tool) {
      const call = { index: 0, id: callId, type: "function", function: { name: tool.name, arguments: "" } };
      events.push(chunk([choice({ role: "assistant", content: null, tool_calls: [call] })]));
      for (const a of pieces(args)) events.push(chunk([choice({ tool_calls: [{ index: 0, function: { arguments: a } }] })]));
    } else {
      events.push(chunk([choice({ role: "assistant", content: "", refusal: null })]));
      for (const content of pieces(this.reply.text)) events.push(chunk([choice({ content })]));
    }
    events.push(chunk([choice({}, finish)]));
    if (includeUsage) events.push(chunk([], { usage }));
    events.push(sse(null, "[DONE]"));
    return stream(events);
  }
}

// ---------------------------------------------------------------------------------------------
// A Cursor-like service (docs/wire.md, "Cursor"): key exchange, then RPCs that need the session token.

const CONNECT_CODES: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "not_found",
  429: "resource_exhausted",
  500: "internal",
  503: "unavailable",
};

function b64url(v: unknown): string {
  return Buffer.from(JSON.stringify(v)).toString("base64url");
}

/** JWT-shaped (header.payload.signature, `eyJ…`), with an `exp` the proxy can mirror. */
function jwt(type: string, ttlSeconds: number): string {
  const iat = now();
  const payload = { sub: `auth0|user_${rid(26)}`, type, iat, exp: iat + ttlSeconds, randomness: rid(16) };
  const sig = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  return `${b64url({ alg: "HS256", typ: "JWT" })}.${b64url(payload)}.${sig}`;
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

/** A length-delimited protobuf field. */
function protoField(field: number, value: Uint8Array | string): Uint8Array {
  const bytes = typeof value === "string" ? new TextEncoder().encode(value) : value;
  return new Uint8Array([...varint((field << 3) | 2), ...varint(bytes.length), ...bytes]);
}

/** A Connect streaming envelope: flag byte, 4-byte big-endian length, payload. */
export function connectFrame(flags: number, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + payload.length);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, payload.length);
  out.set(payload, 5);
  return out;
}

const CURSOR_MODELS = ["gpt-5", "claude-4.5-sonnet"];

class CursorMock extends Mock implements CursorMockProvider {
  realSessionToken = jwt("api_key_token", 3600);
  realRefreshToken = jwt("refresh_token", 60 * 86400);
  apiKey: string | null = null;
  echo = false;

  protected errorBody(status: number, message: string): unknown {
    return { code: CONNECT_CODES[status] ?? (status >= 500 ? "unavailable" : "unknown"), message };
  }

  protected route(r: Received): Answer {
    const { method, path } = r;
    if (method === "POST" && path === "/auth/exchange_user_api_key") return this.exchange(r);
    const rpc = path === "/aiserver.v1.AiService/AvailableModels" || path === "/agent.v1.AgentService/RunSSE";
    if (method !== "POST" || !rpc) return json(404, this.errorBody(404, `${method} ${path} not found`));
    if (r.headers.authorization !== `Bearer ${this.realSessionToken}`) {
      return json(401, this.errorBody(401, "Not logged in (no valid session token)"));
    }
    if (this.echo && path === "/aiserver.v1.AiService/AvailableModels") {
      // A unary answer of declared length, as Connect sends one.
      const text = JSON.stringify({ echo: r.body, authorization: r.headers.authorization });
      return {
        status: 200,
        headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(text)) },
        chunks: [text],
      };
    }
    if (this.echo) {
      // The header's frame goes out in two writes, cut inside the token.
      const auth = connectFrame(0, new TextEncoder().encode(r.headers.authorization));
      return {
        status: 200,
        headers: { "content-type": "application/connect+proto" },
        chunks: [connectFrame(0, r.bytes), auth.subarray(0, 30), auth.subarray(30), connectFrame(2, new TextEncoder().encode("{}"))],
      };
    }
    if (path === "/aiserver.v1.AiService/AvailableModels") {
      if ((r.headers["content-type"] ?? "").includes("json")) return json(200, { models: CURSOR_MODELS.map((name) => ({ name })) });
      const payload = CURSOR_MODELS.map((name) => protoField(1, protoField(1, name)));
      return { status: 200, headers: { "content-type": "application/proto" }, chunks: [Buffer.concat(payload)] };
    }
    const frames = pieces(this.reply.text).map((p) => connectFrame(0, protoField(1, p)));
    frames.push(connectFrame(2, new TextEncoder().encode("{}")));
    return { status: 200, headers: { "content-type": "application/connect+proto" }, chunks: frames };
  }

  private exchange(r: Received): Answer {
    const auth = r.headers.authorization ?? "";
    const key = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    const body = parseBody(r);
    const bodyKey = body && typeof body.apiKey === "string" ? body.apiKey : null;
    const valid = key !== "" && (this.apiKey === null || (key === this.apiKey && (bodyKey === null || bodyKey === this.apiKey)));
    if (!valid)
      return json(401, this.errorBody(401, this.echo ? `The provided API key is invalid: ${key}` : "The provided API key is invalid."));
    return json(200, { accessToken: this.realSessionToken, refreshToken: this.realRefreshToken });
  }
}
