import { describe, expect, test } from "bun:test";
import { type Usage, UsageTap } from "../../src/proxy/meters/usage";
import type { Wire } from "../../src/proxy/request/surface";

const enc = new TextEncoder();
const SSE = "text/event-stream; charset=utf-8";

/** Feed `body` in the given pieces (byte offsets) and return what the tap read. */
function tap(wire: Wire, body: string | Uint8Array, contentType: string | null, cuts: number[] = []) {
  const bytes = typeof body === "string" ? enc.encode(body) : body;
  const t = new UsageTap(wire, contentType);
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    t.push(bytes.slice(at, cut));
    at = cut;
  }
  const usage = t.end();
  return { usage, error: t.error, overflowed: t.overflowed };
}

const sse = (events: Array<[string | null, unknown]>, eol = "\n") =>
  events
    .map(
      ([name, data]) =>
        `${name === null ? "" : `event: ${name}${eol}`}data: ${typeof data === "string" ? data : JSON.stringify(data)}${eol}${eol}`,
    )
    .join("");

// docs/wire.md, "Where usage and the model are in an answer" (Anthropic's stream), with multi-byte text in a delta and in the usage-carrying message_delta line.
const anthropicStream = sse([
  [
    "message_start",
    {
      type: "message_start",
      message: {
        id: "msg_01XFDUDYJgAACzvnptvVoYEL",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 25,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 1,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
          service_tier: "standard",
        },
      },
    },
  ],
  ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
  ["ping", { type: "ping" }],
  ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Héllo 😀 wörld" } }],
  [
    "content_block_delta",
    {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: 'say "usage": {"input_tokens": 999}' },
    },
  ],
  ["content_block_stop", { type: "content_block_stop", index: 0 }],
  [
    "message_delta",
    {
      type: "message_delta",
      delta: { stop_reason: "stop_sequence", stop_sequence: "✓😀" },
      usage: { output_tokens: 15 },
    },
  ],
  ["message_stop", { type: "message_stop" }],
]);
const anthropicUsage: Usage = { input: 25, output: 15, cacheRead: 0, cacheWrite: 0 };

/** An Anthropic stream fed to the tap in chunks of `size` bytes, as a socket hands it over. */
function inChunks(body: string, size: number) {
  const bytes = enc.encode(body);
  const cuts = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => i * size).slice(1);
  return tap("anthropic", bytes, SSE, cuts);
}

/** `stream` fed in two parts, cut at every byte offset in turn, reads as `usage` each time. */
function splitEverywhere(wire: Wire, stream: string, usage: Usage): void {
  const bytes = enc.encode(stream);
  for (let cut = 0; cut <= bytes.length; cut++) expect(tap(wire, bytes, SSE, [cut]).usage).toEqual(usage);
}

describe("Anthropic Messages SSE", () => {
  test("split at every pair of offsets around the usage lines, and one byte at a time", () => {
    const bytes = enc.encode(anthropicStream);
    const delta = anthropicStream.indexOf("event: message_delta");
    const start = enc.encode(anthropicStream.slice(0, delta)).length;
    for (let a = start; a < bytes.length; a += 3) {
      for (let b = a; b <= bytes.length; b += 7) {
        expect(tap("anthropic", bytes, SSE, [a, b]).usage).toEqual(anthropicUsage);
      }
    }
    const ones = Array.from({ length: bytes.length }, (_, i) => i);
    expect(tap("anthropic", bytes, SSE, ones).usage).toEqual(anthropicUsage);
  });

  test("CRLF and bare-CR line endings, split everywhere", () => {
    for (const eol of ["\r\n", "\r"]) {
      const bytes = enc.encode(anthropicStream.replaceAll("\n", eol));
      for (let cut = 0; cut <= bytes.length; cut += 1) {
        expect(tap("anthropic", bytes, SSE, [cut]).usage).toEqual(anthropicUsage);
      }
    }
  });

  test("cache fields and a delta that restates input (last non-null wins)", () => {
    const body = sse([
      [
        "message_start",
        {
          type: "message_start",
          message: {
            usage: {
              input_tokens: 3,
              cache_creation_input_tokens: 1200,
              cache_read_input_tokens: 48000,
              output_tokens: 1,
            },
          },
        },
      ],
      ["message_delta", { type: "message_delta", usage: { output_tokens: 40, input_tokens: null, cache_read_input_tokens: null } }],
      ["message_delta", { type: "message_delta", usage: { output_tokens: 95, cache_creation_input_tokens: 1300 } }],
    ]);
    expect(tap("anthropic", body, SSE).usage).toEqual({ input: 3, output: 95, cacheRead: 48000, cacheWrite: 1300 });
  });

  test("Ollama-style: zero usage at start, cumulative input and output in message_delta", () => {
    const body = sse([
      ["message_start", { type: "message_start", message: { id: "msg_x", usage: { input_tokens: 0, output_tokens: 0 } } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "hi" } }],
      ["message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { input_tokens: 12, output_tokens: 7 } }],
      ["message_delta", { type: "message_delta", usage: { input_tokens: 12, output_tokens: 34 } }],
      ["message_stop", { type: "message_stop" }],
    ]);
    expect(tap("anthropic", body, SSE).usage).toEqual({ input: 12, output: 34, cacheRead: 0, cacheWrite: 0 });
  });

  test("an in-stream error after HTTP 200 is recorded with the usage so far", () => {
    const body = sse([
      ["message_start", { type: "message_start", message: { usage: { input_tokens: 25, output_tokens: 1 } } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "par" } }],
      ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
    ]);
    const r = tap("anthropic", body, SSE);
    expect(r.usage).toEqual({ input: 25, output: 1, cacheRead: 0, cacheWrite: 0 });
    expect(r.error).toEqual({ type: "overloaded_error", message: "Overloaded" });
  });

  test("a stream cut before any usage, or with no trailing blank line", () => {
    expect(tap("anthropic", 'event: ping\ndata: {"type":"ping"}\n\n', SSE).usage).toBeNull();
    const noTail = anthropicStream.trimEnd();
    expect(tap("anthropic", noTail.slice(0, noTail.lastIndexOf("event: message_stop")).trimEnd(), SSE).usage).toEqual(anthropicUsage);
  });

  test("events without event: lines are still read", () => {
    const body = anthropicStream
      .split("\n")
      .filter((l) => !l.startsWith("event:"))
      .join("\n");
    expect(tap("anthropic", body, SSE).usage).toEqual(anthropicUsage);
  });

  test("multi-line data is joined per the SSE spec", () => {
    const body =
      'event: message_start\ndata: {"type":"message_start",\ndata: "message":{"usage":{"input_tokens":5,"output_tokens":1}}}\n\n';
    expect(tap("anthropic", body, SSE).usage).toEqual({ input: 5, output: 1, cacheRead: 0, cacheWrite: 0 });
  });

  test("a line over 1 MiB is dropped without stopping the tap", () => {
    const giant = "x".repeat(1_200_000);
    const body = `data: {"type":"content_block_delta","delta":{"text":"${giant}"},"usage":{"input_tokens":1}}\n\n` + anthropicStream;
    const r = inChunks(body, 65536);
    expect(r.overflowed).toBe(true);
    expect(r.usage).toEqual(anthropicUsage);
  });

  test("a huge delta of a known-irrelevant event is skipped without counting as overflow", () => {
    const body =
      `event: content_block_delta\ndata: {"type":"content_block_delta","delta":{"text":"${"y".repeat(3_000_000)}"}}\n\n` + anthropicStream;
    const r = inChunks(body, 16384);
    expect(r.overflowed).toBe(false);
    expect(r.usage).toEqual(anthropicUsage);
  });

  test("garbage data lines are ignored, not thrown", () => {
    const body = "event: message_start\ndata: {not json\n\n" + "event: message_delta\ndata: [1,2]\n\n" + anthropicStream;
    expect(tap("anthropic", body, SSE).usage).toEqual(anthropicUsage);
  });
});

// docs/wire.md, "Where usage and the model are in an answer" (OpenAI Responses).
const responsesStream = sse([
  ["response.created", { type: "response.created", sequence_number: 0, response: { id: "resp_1", status: "in_progress", usage: null } }],
  ["response.in_progress", { type: "response.in_progress", sequence_number: 1, response: { id: "resp_1" } }],
  ["response.output_item.added", { type: "response.output_item.added", sequence_number: 2, output_index: 0, item: { type: "message" } }],
  ["response.output_text.delta", { type: "response.output_text.delta", sequence_number: 3, item_id: "msg_1", delta: "Bonjour à tous" }],
  ["response.output_item.done", { type: "response.output_item.done", sequence_number: 4, item: { type: "message" } }],
  [
    "response.completed",
    {
      type: "response.completed",
      sequence_number: 5,
      response: {
        id: "resp_1",
        status: "completed",
        output: [{ type: "message", content: [{ type: "output_text", text: "Bonjour à tous" }] }],
        usage: {
          input_tokens: 30,
          input_tokens_details: { cached_tokens: 10 },
          output_tokens: 5,
          output_tokens_details: { reasoning_tokens: 2 },
          total_tokens: 35,
        },
      },
    },
  ],
]);

const responsesUsage: Usage = { input: 20, output: 5, cacheRead: 10, cacheWrite: 0 };

describe("OpenAI Responses SSE", () => {
  test("response.incomplete carries usage too", () => {
    const body = sse([
      [
        "response.incomplete",
        {
          type: "response.incomplete",
          response: { status: "incomplete", usage: { input_tokens: 8, output_tokens: 400 } },
        },
      ],
    ]);
    expect(tap("openai", body, SSE).usage).toEqual({ input: 8, output: 400, cacheRead: 0, cacheWrite: 0 });
  });

  test("response.failed records the error code and any usage", () => {
    const body = sse([
      [
        "response.failed",
        {
          type: "response.failed",
          response: {
            status: "failed",
            error: { code: "rate_limit_exceeded", message: "Rate limit reached. Please try again in 1.5s." },
            usage: { input_tokens: 100, input_tokens_details: { cached_tokens: 0 }, output_tokens: 0 },
          },
        },
      ],
    ]);
    const r = tap("openai", body, SSE);
    expect(r.usage).toEqual({ input: 100, output: 0, cacheRead: 0, cacheWrite: 0 });
    expect(r.error).toEqual({ type: "rate_limit_exceeded", message: "Rate limit reached. Please try again in 1.5s." });
  });

  test("a bare error event", () => {
    const body = sse([["error", { type: "error", code: "server_error", message: "The server had an error", param: null }]]);
    const r = tap("openai", body, SSE);
    expect(r.usage).toBeNull();
    expect(r.error).toEqual({ type: "server_error", message: "The server had an error" });
  });

  test("a stream closed before response.completed has no usage", () => {
    const cut = responsesStream.slice(0, responsesStream.indexOf("event: response.completed"));
    expect(tap("openai", cut, SSE).usage).toBeNull();
  });
});

// docs/wire.md, "Where usage and the model are in an answer": Chat Completions with stream_options.include_usage.
const chatStream = sse([
  [
    null,
    {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: { role: "assistant", content: "" } }],
      usage: null,
    },
  ],
  [
    null,
    {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: { content: "Hi 👋" } }],
      usage: null,
    },
  ],
  [
    null,
    {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
      usage: null,
    },
  ],
  [
    null,
    {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      choices: [],
      usage: {
        prompt_tokens: 40,
        completion_tokens: 9,
        total_tokens: 49,
        prompt_tokens_details: { cached_tokens: 32 },
      },
    },
  ],
  [null, "[DONE]"],
]);

const chatUsage: Usage = { input: 8, output: 9, cacheRead: 32, cacheWrite: 0 };

describe("Chat Completions SSE", () => {
  test("without include_usage there is no reading", () => {
    const body = chatStream
      .split("\n\n")
      .filter((e) => !e.includes("prompt_tokens"))
      .join("\n\n");
    expect(tap("openai", body, SSE).usage).toBeNull();
  });

  test("an error chunk mid-stream (OpenRouter style) is recorded", () => {
    const body = sse([
      [null, { error: { code: 502, message: "Provider returned error" } }],
      [null, "[DONE]"],
    ]);
    expect(tap("openai", body, SSE).error).toEqual({ type: "error", message: "Provider returned error" });
  });
});

describe("each wire's stream, whole and split at every byte offset (mid-line, mid-UTF-8 character)", () => {
  const streams: [string, Wire, string, Usage][] = [
    ["Anthropic Messages: message_start, then the last message_delta", "anthropic", anthropicStream, anthropicUsage],
    ["OpenAI Responses: from response.completed, cached tokens split out of input", "openai", responsesStream, responsesUsage],
    ["Chat Completions: from the final chunk; [DONE] is not JSON", "openai", chatStream, chatUsage],
  ];
  test.each(streams)("%s", (_, wire, stream, usage) => expect(tap(wire, stream, SSE).usage).toEqual(usage));
  test.each(streams)("%s; split everywhere", (_, wire, stream, usage) => splitEverywhere(wire, stream, usage));
});

describe("plain JSON bodies", () => {
  const bodies: [string, Wire, object, string, Usage][] = [
    [
      "non-streamed Anthropic message",
      "anthropic",
      {
        id: "msg_1",
        type: "message",
        content: [{ type: "text", text: "Hello" }],
        usage: { input_tokens: 2095, cache_creation_input_tokens: 10, cache_read_input_tokens: 20, output_tokens: 503 },
      },
      "application/json",
      { input: 2095, output: 503, cacheRead: 20, cacheWrite: 10 },
    ],
    [
      "non-streamed Responses body: cached tokens split out of input",
      "openai",
      { id: "resp_1", object: "response", usage: { input_tokens: 50, input_tokens_details: { cached_tokens: 50 }, output_tokens: 3 } },
      "application/json",
      { input: 0, output: 3, cacheRead: 50, cacheWrite: 0 },
    ],
    [
      "non-streamed Chat Completions body, a charset in its content-type",
      "openai",
      { id: "chatcmpl-1", object: "chat.completion", usage: { prompt_tokens: 11, completion_tokens: 4 } },
      "application/json; charset=utf-8",
      { input: 11, output: 4, cacheRead: 0, cacheWrite: 0 },
    ],
  ];
  test.each(bodies)("%s", (_, wire, body, contentType, usage) => expect(tap(wire, JSON.stringify(body), contentType).usage).toEqual(usage));

  test("count_tokens has no usage", () => {
    expect(tap("anthropic", '{"input_tokens": 2095}', "application/json").usage).toBeNull();
  });

  test("error bodies are recorded", () => {
    const anthropic =
      '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_1"}';
    expect(tap("anthropic", anthropic, "application/json").error).toEqual({
      type: "rate_limit_error",
      message: "Number of request tokens has exceeded your per-minute rate limit",
    });
    const openai =
      '{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}';
    const r = tap("openai", openai, "application/json");
    expect(r.usage).toBeNull();
    expect(r.error?.type).toBe("invalid_request_error");
  });

  test("a JSON body split across chunks, mid-UTF-8", () => {
    const body = enc.encode(JSON.stringify({ content: [{ text: "ça va 😀" }], usage: { input_tokens: 1, output_tokens: 2 } }));
    for (let cut = 0; cut <= body.length; cut++) {
      expect(tap("anthropic", body, "application/json", [cut]).usage).toEqual({
        input: 1,
        output: 2,
        cacheRead: 0,
        cacheWrite: 0,
      });
    }
  });

  test("without a content-type the first byte decides", () => {
    expect(tap("anthropic", ' \n{"usage":{"input_tokens":1,"output_tokens":2}}', null).usage).toEqual({
      input: 1,
      output: 2,
      cacheRead: 0,
      cacheWrite: 0,
    });
    expect(tap("anthropic", anthropicStream, null).usage).toEqual(anthropicUsage);
    expect(tap("anthropic", "", null).usage).toBeNull();
  });

  test("a truncated or non-JSON body gives no usage rather than an exception", () => {
    expect(tap("anthropic", '{"usage":{"input_tokens":1', "application/json").usage).toBeNull();
    expect(tap("anthropic", "<html>502 Bad Gateway</html>", "text/html").usage).toBeNull();
  });
});

describe("lifecycle", () => {
  test("end() is idempotent and push after end is ignored", () => {
    const t = new UsageTap("anthropic", SSE);
    t.push(enc.encode(anthropicStream));
    expect(t.end()).toEqual(anthropicUsage);
    t.push(enc.encode(sse([["message_delta", { type: "message_delta", usage: { output_tokens: 999 } }]])));
    expect(t.end()).toEqual(anthropicUsage);
  });
});
