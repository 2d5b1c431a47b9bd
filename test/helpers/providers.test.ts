import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { until } from "./lazy";
import * as Providers from "./providers";

type Obj = Record<string, any>;
interface Event {
  event: string | null;
  data: string;
}

function parseSse(text: string): Event[] {
  const out: Event[] = [];
  for (const block of text.split("\n\n")) {
    if (block.trim() === "") continue;
    let event: string | null = null;
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    out.push({ event, data: data.join("\n") });
  }
  return out;
}

/** The content_block_delta events' `field`s joined, each delta checked to be of `type`. */
function deltas(events: Event[], type: string, field: string): string {
  return events
    .filter((e) => e.event === "content_block_delta")
    .map((e) => JSON.parse(e.data).delta)
    .map((d) => {
      expect(d.type).toBe(type);
      return d[field];
    })
    .join("");
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });

/** A raw HTTP/1.1 exchange: every byte with its arrival time, and how the connection ended. */
function raw(port: number, request: string): Promise<{ chunks: { at: number; text: string }[]; end: "fin" | "reset"; sentAt: number }> {
  return new Promise((resolve) => {
    const chunks: { at: number; text: string }[] = [];
    let end: "fin" | "reset" = "fin";
    let sentAt = 0;
    const s = connect(port, "127.0.0.1", () => {
      sentAt = performance.now();
      s.write(request);
    });
    s.on("data", (d) => chunks.push({ at: performance.now(), text: d.toString() }));
    s.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ECONNRESET") end = "reset";
    });
    s.on("close", () => resolve({ chunks, end, sentAt }));
  });
}

const streamReq = (path: string, body: unknown) => {
  const b = JSON.stringify(body);
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\nConnection: close\r\n\r\n${b}`;
};

const mocks: Providers.MockProvider[] = [];
afterAll(() => Promise.all(mocks.map((m) => m.close())));

/** A describe block's mock: closed after the file, and `fresh` (its state for a test) run before each test. */
async function kept<M extends Providers.MockProvider>(made: Promise<M>, fresh: () => void): Promise<M> {
  const m = await made;
  mocks.push(m);
  beforeEach(fresh);
  return m;
}

describe("anthropic", async () => {
  const m = await kept(Providers.anthropic(), () => {
    m.answer({ text: "Héllo wörld 😀, from the mock" });
    m.usage = { input: 25, output: 15, cacheRead: 7, cacheWrite: 3 };
    m.rateLimitHeaders = {};
    m.extraHeaders = {};
  });

  test("JSON answer with usage in the top-level usage object, request recorded", async () => {
    const res = await post(
      `${m.url}/v1/messages?beta=true`,
      { model: "claude-x", messages: [{ role: "user", content: "hi" }], max_tokens: 10 },
      { "x-api-key": "sk-real" },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = (await res.json()) as Obj;
    expect(body.type).toBe("message");
    expect(body.id).toMatch(/^msg_/);
    expect(body.model).toBe("claude-x");
    expect(body.content).toEqual([{ type: "text", text: m.reply.text }]);
    expect(body.stop_reason).toBe("end_turn");
    expect(body.usage).toMatchObject({ input_tokens: 25, output_tokens: 15, cache_read_input_tokens: 7, cache_creation_input_tokens: 3 });
    const [r] = m.received;
    expect(r).toMatchObject({ method: "POST", path: "/v1/messages", query: "?beta=true", connection: 1 });
    expect(r!.headers["x-api-key"]).toBe("sk-real");
    expect(JSON.parse(r!.body).model).toBe("claude-x");
  });

  test("SSE answer per docs/wire.md (where usage is in an answer), rate-limit and extra headers present", async () => {
    m.rateLimitHeaders = { "anthropic-ratelimit-unified-5h-utilization": "0.42" };
    m.extraHeaders = { "set-cookie": "a=b", "request-id": "req_1" };
    const res = await post(
      `${m.url}/v1/messages?beta=true`,
      { model: "claude-x", messages: [{ role: "user", content: "hi" }], stream: true },
      { "accept-encoding": "gzip, br" },
    );
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(res.headers.get("anthropic-ratelimit-unified-5h-utilization")).toBe("0.42");
    expect(res.headers.get("set-cookie")).toBe("a=b");
    expect(res.headers.get("request-id")).toBe("req_1");
    const events = parseSse(await res.text());
    const types = events.map((e) => e.event);
    expect(types[0]).toBe("message_start");
    expect(types.slice(1, 3)).toEqual(["content_block_start", "ping"]);
    expect(types.slice(-4)).toEqual(["content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    for (const e of events) expect(JSON.parse(e.data).type).toBe(e.event);
    const start = JSON.parse(events[0]!.data).message;
    expect(start).toMatchObject({ type: "message", role: "assistant", model: "claude-x", content: [], stop_reason: null });
    expect(start.usage).toMatchObject({ input_tokens: 25, cache_read_input_tokens: 7, cache_creation_input_tokens: 3, output_tokens: 1 });
    const text = deltas(events, "text_delta", "text");
    expect(text).toBe(m.reply.text);
    const delta = JSON.parse(events.at(-2)!.data);
    expect(delta.delta.stop_reason).toBe("end_turn");
    expect(delta.usage.output_tokens).toBe(15);
  });

  test("tool_use once, then text when the last message carries a tool_result", async () => {
    m.reply = { text: "done", toolUse: { name: "Bash", input: { command: "ls -la", description: "list" } } };
    const events = parseSse(
      await (await post(`${m.url}/v1/messages`, { messages: [{ role: "user", content: "go" }], stream: true })).text(),
    );
    const block = JSON.parse(events[1]!.data).content_block;
    expect(block).toMatchObject({ type: "tool_use", name: "Bash", input: {} });
    expect(block.id).toMatch(/^toolu_/);
    const partial = deltas(events, "input_json_delta", "partial_json");
    expect(JSON.parse(partial)).toEqual({ command: "ls -la", description: "list" });
    expect(JSON.parse(events.at(-2)!.data).delta.stop_reason).toBe("tool_use");

    const messages = [
      { role: "user", content: "go" },
      { role: "assistant", content: [block] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: block.id, content: "ok" }] },
    ];
    const body = (await (await post(`${m.url}/v1/messages`, { messages })).json()) as Obj;
    expect(body.content).toEqual([{ type: "text", text: "done" }]);
    expect(body.stop_reason).toBe("end_turn");
  });

  test("count_tokens, models, probes, admin routes and 404 shape", async () => {
    expect(await (await post(`${m.url}/v1/messages/count_tokens?beta=true`, { messages: [] })).json()).toEqual({ input_tokens: 25 });
    const models = (await (await fetch(`${m.url}/v1/models?limit=1000`)).json()) as Obj;
    expect(models.data[0].type).toBe("model");
    for (const p of ["/", "/api/hello"]) expect((await fetch(m.url + p, { method: "HEAD" })).status).toBe(200);
    expect(await (await post(`${m.url}/api/pull`, { model: "x" })).json()).toEqual({ status: "success" });
    expect(m.received.some((r) => r.path === "/api/pull")).toBe(true);
    const nf = await fetch(`${m.url}/v1/nope`);
    expect(nf.status).toBe(404);
    expect(((await nf.json()) as Obj).error.type).toBe("not_found_error");
  });

  test("status: 529 overloaded in Anthropic shape, 429 with retry-after", async () => {
    m.behavior = { kind: "status", status: 529 };
    const res = await post(`${m.url}/v1/messages`, { messages: [] });
    expect(res.status).toBe(529);
    const body = (await res.json()) as Obj;
    expect(body).toMatchObject({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
    m.behavior = { kind: "status", status: 429, headers: { "retry-after": "7" } };
    const limited = await post(`${m.url}/v1/messages`, { messages: [] });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("7");
    expect(((await limited.json()) as Obj).error.type).toBe("rate_limit_error");
  });

  test("reset-first: the first connection gets an RST before any byte, the next answers", async () => {
    m.behavior = { kind: "reset-first" };
    const first = await raw(m.port, streamReq("/v1/messages", { messages: [], stream: true }));
    expect(first.end).toBe("reset");
    expect(first.chunks).toEqual([]);
    const res = await post(`${m.url}/v1/messages`, { messages: [] });
    expect(res.status).toBe(200);
    expect(m.received.map((r) => r.connection)).toEqual([1, 2]);
    // With fetch too: re-arming by setting the behavior again.
    m.behavior = { kind: "reset-first" };
    await expect(post(`${m.url}/v1/messages`, { messages: [] })).rejects.toThrow();
    expect(m.received).toHaveLength(3);
    expect((await post(`${m.url}/v1/messages`, { messages: [] })).status).toBe(200);
  });

  test("reset: every request", async () => {
    m.behavior = { kind: "reset" };
    for (let i = 0; i < 2; i++) expect((await raw(m.port, streamReq("/v1/messages", { messages: [] }))).end).toBe("reset");
    expect(m.received).toHaveLength(2);
  });

  test("hang: fetch with a timeout gives up, request recorded", async () => {
    m.behavior = { kind: "hang" };
    const t0 = performance.now();
    const err = await fetch(`${m.url}/v1/messages`, { method: "POST", body: "{}", signal: AbortSignal.timeout(300) }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.name).toBe("TimeoutError");
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(m.received).toHaveLength(1);
  });

  test("silent-then-stream: no byte at all before the delay, then two halves", async () => {
    m.behavior = { kind: "silent-then-stream", firstByteDelayMs: 300, gapMs: 200 };
    const r = await raw(m.port, streamReq("/v1/messages", { messages: [], stream: true }));
    expect(r.end).toBe("fin");
    expect(r.chunks.length).toBeGreaterThanOrEqual(2);
    expect(r.chunks[0]!.at - r.sentAt).toBeGreaterThanOrEqual(295);
    expect(r.chunks.at(-1)!.at - r.chunks[0]!.at).toBeGreaterThanOrEqual(195);
    const all = r.chunks.map((c) => c.text).join("");
    expect(all).toStartWith("HTTP/1.1 200");
    expect(all).toContain("event: message_stop");
  });

  test("reset-mid-stream: headers and some events, then ECONNRESET", async () => {
    m.behavior = { kind: "reset-mid-stream" };
    const res = await post(`${m.url}/v1/messages`, { messages: [], stream: true });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let got = "";
    const err = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return null;
        got += new TextDecoder().decode(value);
      }
    })().catch((e: Error) => e);
    expect(err).not.toBeNull();
    expect(got).toContain("event: message_start");
    expect(got).not.toContain("message_stop");
  });

  test("waitFor and reset", async () => {
    const waiting = m.waitFor(2, 2000);
    await fetch(m.url, { method: "HEAD" });
    await fetch(m.url, { method: "HEAD" });
    expect(await waiting).toHaveLength(2);
    m.behavior = { kind: "hang" };
    m.reset();
    expect(m.received).toHaveLength(0);
    expect(m.behavior as Providers.Behavior).toEqual({ kind: "ok" });
    await fetch(m.url, { method: "HEAD" });
    expect(m.received[0]!.connection).toBe(1);
    await expect(m.waitFor(5, 100)).rejects.toThrow("1 of 5");
  });
});

describe("openai", async () => {
  const m = await kept(Providers.openai(), () => {
    m.answer({ text: "Hi there from the responses mock" });
    m.usage = { input: 30, output: 5, cacheRead: 10, cacheWrite: 0 };
  });

  test("Responses SSE: sequence numbers, items, completed with usage, no [DONE]", async () => {
    m.rateLimitHeaders = { "x-codex-primary-used-percent": "12.5" };
    const res = await post(`${m.url}/v1/responses`, {
      model: "gpt-5",
      input: [{ type: "message", role: "user", content: [] }],
      stream: true,
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("x-codex-primary-used-percent")).toBe("12.5");
    const text = await res.text();
    expect(text).not.toContain("[DONE]");
    const events = parseSse(text);
    const datas = events.map((e) => JSON.parse(e.data) as Obj);
    for (const [i, e] of events.entries()) expect(datas[i]!.type).toBe(e.event);
    expect(datas.map((d) => d.sequence_number)).toEqual(datas.map((_, i) => i));
    const types = datas.map((d) => d.type);
    for (const t of ["response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done"])
      expect(types).toContain(t);
    expect(types.at(-1)).toBe("response.completed");
    expect(
      datas
        .filter((d) => d.type === "response.output_text.delta")
        .map((d) => d.delta)
        .join(""),
    ).toBe(m.reply.text);
    const done = datas.find((d) => d.type === "response.output_item.done")!;
    expect(done.item).toMatchObject({ type: "message", role: "assistant", content: [{ type: "output_text", text: m.reply.text }] });
    const completed = datas.at(-1)!.response;
    expect(completed.status).toBe("completed");
    expect(completed.usage).toEqual({
      input_tokens: 40,
      input_tokens_details: { cached_tokens: 10 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 45,
    });
  });

  test("Responses function_call, then text after function_call_output; JSON when not streaming", async () => {
    m.reply = { text: "all done", toolUse: { name: "shell", input: { command: ["ls"] } } };
    const datas = parseSse(await (await post(`${m.url}/v1/responses`, { input: "hi", stream: true })).text()).map(
      (e) => JSON.parse(e.data) as Obj,
    );
    const item = datas.find((d) => d.type === "response.output_item.done")!.item;
    expect(item).toMatchObject({ type: "function_call", name: "shell" });
    expect(item.call_id).toMatch(/^call_/);
    expect(JSON.parse(item.arguments)).toEqual({ command: ["ls"] });
    const streamed = datas
      .filter((d) => d.type === "response.function_call_arguments.delta")
      .map((d) => d.delta)
      .join("");
    expect(streamed).toBe(item.arguments);
    expect(datas.at(-1)!.type).toBe("response.completed");

    const input = [item, { type: "function_call_output", call_id: item.call_id, output: "a b" }];
    const body = (await (await post(`${m.url}/v1/responses`, { input, stream: false })).json()) as Obj;
    expect(body.object).toBe("response");
    expect(body.output[0]).toMatchObject({ type: "message", content: [{ type: "output_text", text: "all done" }] });
    expect(body.usage.input_tokens).toBe(40);
  });

  test("Chat Completions SSE: chunks, usage chunk with include_usage, then [DONE]", async () => {
    const withUsage = parseSse(
      await (
        await post(`${m.url}/v1/chat/completions`, {
          messages: [{ role: "user", content: "hi" }],
          stream: true,
          stream_options: { include_usage: true },
        })
      ).text(),
    );
    expect(withUsage.every((e) => e.event === null)).toBe(true);
    expect(withUsage.at(-1)!.data).toBe("[DONE]");
    const chunks = withUsage.slice(0, -1).map((e) => JSON.parse(e.data) as Obj);
    for (const c of chunks) expect(c.object).toBe("chat.completion.chunk");
    expect(chunks.flatMap((c) => c.choices.map((ch: Obj) => ch.delta.content ?? "")).join("")).toBe(m.reply.text);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      prompt_tokens: 40,
      completion_tokens: 5,
      total_tokens: 45,
      prompt_tokens_details: { cached_tokens: 10 },
    });
    expect(chunks.at(-2)!.choices[0].finish_reason).toBe("stop");

    const without = parseSse(await (await post(`${m.url}/v1/chat/completions`, { messages: [], stream: true })).text());
    expect(without.at(-1)!.data).toBe("[DONE]");
    expect(without.some((e) => e.data.includes('"usage"'))).toBe(false);
  });

  test("Chat Completions tool call, JSON answer, models, HEAD, 401 shape", async () => {
    m.reply = { text: "ok", toolUse: { name: "read", input: { path: "a" } } };
    const chunks = parseSse(await (await post(`${m.url}/v1/chat/completions`, { messages: [], stream: true })).text())
      .slice(0, -1)
      .map((e) => JSON.parse(e.data) as Obj);
    const args = chunks
      .flatMap((c) => c.choices.flatMap((ch: Obj) => ch.delta.tool_calls ?? []))
      .map((t: Obj) => t.function.arguments)
      .join("");
    expect(JSON.parse(args)).toEqual({ path: "a" });
    expect(chunks.at(-1)!.choices[0].finish_reason).toBe("tool_calls");
    const answered = (await (
      await post(`${m.url}/v1/chat/completions`, { messages: [{ role: "tool", tool_call_id: "x", content: "y" }] })
    ).json()) as Obj;
    expect(answered.choices[0].message.content).toBe("ok");
    expect(answered.usage.prompt_tokens).toBe(40);
    expect((((await (await fetch(`${m.url}/v1/models`)).json()) as Obj).data as Obj[])[0]!.object).toBe("model");
    expect((await fetch(m.url, { method: "HEAD" })).status).toBe(200);
    m.behavior = { kind: "status", status: 401 };
    const denied = await post(`${m.url}/v1/responses`, {});
    expect(denied.status).toBe(401);
    expect(((await denied.json()) as Obj).error.code).toBe("invalid_api_key");
  });

  test("silent-then-stream on Responses: first byte after the delay, stream complete", async () => {
    m.behavior = { kind: "silent-then-stream", firstByteDelayMs: 300, gapMs: 100 };
    const r = await raw(m.port, streamReq("/v1/responses", { input: "x", stream: true }));
    expect(r.chunks[0]!.at - r.sentAt).toBeGreaterThanOrEqual(295);
    expect(r.chunks.map((c) => c.text).join("")).toContain("event: response.completed");
  });
});

describe("cursor", async () => {
  const m = await kept(Providers.cursor(), () => m.reset());

  test("exchange hands out JWT-shaped tokens; RPCs need the session token", async () => {
    expect(m.realSessionToken).toMatch(/^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/);
    expect(m.realRefreshToken).toMatch(/^eyJ/);
    expect(JSON.parse(Buffer.from(m.realSessionToken.split(".")[1]!, "base64url").toString()).exp).toBeGreaterThan(Date.now() / 1000);

    const ex = await post(`${m.url}/auth/exchange_user_api_key`, {}, { authorization: "Bearer crsr_real_key" });
    expect(ex.status).toBe(200);
    const tokens = (await ex.json()) as Obj;
    expect(tokens).toEqual({ accessToken: m.realSessionToken, refreshToken: m.realRefreshToken });

    const ok = await post(`${m.url}/aiserver.v1.AiService/AvailableModels`, {}, { authorization: `Bearer ${tokens.accessToken}` });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as Obj).models.length).toBeGreaterThan(0);

    const withKey = await post(`${m.url}/aiserver.v1.AiService/AvailableModels`, {}, { authorization: "Bearer crsr_real_key" });
    expect(withKey.status).toBe(401);
    expect(((await withKey.json()) as Obj).code).toBe("unauthenticated");
    expect((await post(`${m.url}/agent.v1.AgentService/RunSSE`, {})).status).toBe(401);

    const run = await fetch(`${m.url}/agent.v1.AgentService/RunSSE`, {
      method: "POST",
      headers: { authorization: `Bearer ${m.realSessionToken}`, "content-type": "application/connect+proto" },
      body: Providers.connectFrame(0, new Uint8Array([1, 2, 3])),
    });
    expect(run.headers.get("content-type")).toBe("application/connect+proto");
    const bytes = new Uint8Array(await run.arrayBuffer());
    const flags: number[] = [];
    for (let at = 0; at < bytes.length; ) {
      flags.push(bytes[at]!);
      at += 5 + new DataView(bytes.buffer, at + 1, 4).getUint32(0);
    }
    expect(flags.at(-1)).toBe(2);
    expect(flags.slice(0, -1).every((f) => f === 0)).toBe(true);
    expect(new TextDecoder().decode(bytes)).toContain("mock");
    expect(m.received.map((r) => r.path)).toContain("/agent.v1.AgentService/RunSSE");
    expect(Array.from(m.received.at(-1)!.bytes.slice(5))).toEqual([1, 2, 3]);
  });

  test("exchange: missing key is 401; a pinned apiKey must match in header and body", async () => {
    expect((await post(`${m.url}/auth/exchange_user_api_key`, {})).status).toBe(401);
    const c = m as Providers.CursorMockProvider;
    c.apiKey = "crsr_right";
    expect((await post(`${m.url}/auth/exchange_user_api_key`, {}, { authorization: "Bearer crsr_wrong" })).status).toBe(401);
    expect(
      (await post(`${m.url}/auth/exchange_user_api_key`, { apiKey: "crsr_wrong" }, { authorization: "Bearer crsr_right" })).status,
    ).toBe(401);
    expect(
      (await post(`${m.url}/auth/exchange_user_api_key`, { apiKey: "crsr_right" }, { authorization: "Bearer crsr_right" })).status,
    ).toBe(200);
    c.apiKey = null;
  });
});

test("close() ends a hanging request and a silent one promptly", async () => {
  const m = await Providers.anthropic();
  m.behavior = { kind: "hang" };
  const hanging = post(`${m.url}/v1/messages`, {}).then(
    () => "answered",
    () => "failed",
  );
  await m.waitFor(1);
  m.behavior = { kind: "silent-then-stream", firstByteDelayMs: 60_000, gapMs: 0 };
  const silent = post(`${m.url}/v1/messages`, { stream: true }).then(
    () => "answered",
    () => "failed",
  );
  await m.waitFor(2);
  let ended = 0;
  for (const r of [hanging, silent]) void r.then(() => ended++);
  await m.close();
  // Ended by close(), not by the silent one's 60 s.
  await until(() => ended === 2, 10_000, "close() to end both requests");
  expect(await hanging).toBe("failed");
  expect(await silent).toBe("failed");
});
