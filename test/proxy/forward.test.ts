/**
 * The proxy end to end: the compiled daemon, real mock providers on loopback, requests made
 * the way an agent makes them. Asserts what the upstream received (the real credential, in the
 * right header, no placeholder) and what the agent received (no real credential).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { codexHost } from "../helpers/fixtures";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const API_KEY = "sk-ant-api03-REAL-" + "k".repeat(80) + "AA";
const OAUTH = "sk-ant-oat01-REAL-" + "o".repeat(60);
const OPENAI_KEY = "sk-proj-REAL-" + "p".repeat(40);

let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;

beforeAll(async () => ({ anthropic, openai, p } = await codexHost(API_KEY, OPENAI_KEY)));
afterAll(() => cleanupAll(anthropic, openai));

const everything = (r: Mock.Received) => JSON.stringify(r.headers) + r.body + r.path + r.query;

async function messages(url: string, headers: Record<string, string>, stream = true, extra: Record<string, unknown> = {}) {
  return fetch(`${url}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 100, stream, messages: [{ role: "user", content: "hi" }], ...extra }),
  });
}

// Some tests rotate the anthropic credential: each test starts from the stored API key, whatever
// ran before it (or failed half-way).
beforeEach(async () => {
  await p.setCredential("anthropic", API_KEY);
});

describe("credential injection", () => {
  test("an API key placeholder becomes the real key in x-api-key upstream; the agent never sees the real one", async () => {
    anthropic.reset();
    const g = await p.grant({ role: "host", profile: "claude" });
    expect(g.envVar).toBe("ANTHROPIC_API_KEY");
    expect(g.placeholder).toMatch(/^sk-ant-api03-lazy-[A-Za-z0-9_-]{88}AA$/);
    const sent = performance.now();
    const res = await messages(g.proxyUrl, { "x-api-key": g.placeholder, "accept-encoding": "gzip, br" });
    const text = await res.text();
    const whole = performance.now() - sent;
    expect(res.status).toBe(200);
    expect(text).toContain("message_stop");
    expect(text).toContain(Mock.DEFAULT_REPLY_TEXT.split(" ")[0]!);
    expect(text).not.toContain(API_KEY);
    for (const v of res.headers.values()) expect(v).not.toContain(API_KEY);
    const [got] = anthropic.received;
    expect(got!.headers["x-api-key"]).toBe(API_KEY);
    expect(got!.headers.authorization).toBeUndefined();
    expect(got!.query).toBe("?beta=true");
    expect(everything(got!)).not.toContain("lazy-");

    const audit = await p.json(["stats", "audit"]);
    const row = audit.rows.at(-1);
    expect(row).toMatchObject({
      role: "host",
      profile: "claude",
      credential: "anthropic",
      method: "POST",
      path: "/v1/messages",
      status: 200,
    });
    expect(row.usage).toEqual({
      input: Mock.DEFAULT_USAGE.input,
      output: Mock.DEFAULT_USAGE.output,
      cacheRead: Mock.DEFAULT_USAGE.cacheRead,
      cacheWrite: Mock.DEFAULT_USAGE.cacheWrite,
    });
    // The first byte came within the request the client saw from its own side, start to end.
    expect(row.ttfbMs).toBeGreaterThanOrEqual(0);
    expect(row.ttfbMs).toBeLessThanOrEqual(Math.ceil(whole));
  });

  test("rotation: the next request uses the new key at once; an OAuth token switches the header form", async () => {
    anthropic.reset();
    const g = await p.grant({ role: "host", profile: "claude" });
    await (await messages(g.proxyUrl, { "x-api-key": g.placeholder }, false)).text();
    const ROTATED = "sk-ant-api03-ROTATED-" + "r".repeat(77) + "AA";
    await p.setCredential("anthropic", ROTATED);
    await (await messages(g.proxyUrl, { "x-api-key": g.placeholder }, false)).text();
    expect(anthropic.received.map((r) => r.headers["x-api-key"])).toEqual([API_KEY, ROTATED]);

    await p.setCredential("anthropic", OAUTH);
    // The agent keeps its placeholder and its header; the upstream gets the OAuth form.
    await (await messages(g.proxyUrl, { "x-api-key": g.placeholder, "anthropic-beta": "claude-code-20250219" }, false)).text();
    const last = anthropic.received.at(-1)!;
    expect(last.headers.authorization).toBe(`Bearer ${OAUTH}`);
    expect(last.headers["x-api-key"]).toBeUndefined();
    expect(last.headers["anthropic-beta"]!.split(",")).toEqual(["claude-code-20250219", "oauth-2025-04-20"]);
    // A launch now gets an OAuth-shaped placeholder in Claude Code's OAuth variable.
    const g2 = await p.grant({ role: "host", profile: "claude" });
    expect(g2.envVar).toBe("CLAUDE_CODE_OAUTH_TOKEN");
    expect(g2.placeholder).toStartWith("sk-ant-oat01-lazy-");
  });

  test("an upstream 401 for an OAuth token says it expired or was revoked, to the agent and in lazy doctor", async () => {
    await p.setCredential("anthropic", OAUTH);
    const g = await p.grant({ role: "host", profile: "claude" });
    anthropic.behavior = {
      kind: "status",
      status: 401,
      body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } },
    };
    const res = await messages(g.proxyUrl, { authorization: `Bearer ${g.placeholder}` }, false);
    const body = await res.json();
    expect(res.status).toBe(401);
    expect(body.error.type).toBe("authentication_error");
    expect(body.error.message).toContain("expired or was revoked");
    expect(body.error.message).toContain("lazy auth set anthropic");
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout).toContain("expired or was revoked");
    anthropic.reset();
    await p.setCredential("anthropic", API_KEY);
    expect((await p.run(["doctor"])).stdout).not.toContain("expired or was revoked");
  });

  test("OpenAI Responses and Chat Completions (SSE) for a codex profile: bearer upstream, usage audited", async () => {
    openai.reset();
    const g = await p.grant({ role: "host", profile: "codex" });
    expect(g.envVar).toBe("OPENAI_API_KEY");
    expect(g.placeholder).toStartWith("sk-proj-lazy-");
    const r1 = await fetch(`${g.proxyUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-5", stream: true, input: "hi" }),
    });
    const t1 = await r1.text();
    expect(t1).toContain("response.completed");
    const r2 = await fetch(`${g.proxyUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "gpt-5",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    const t2 = await r2.text();
    expect(t2).toContain("[DONE]");
    for (const t of [t1, t2]) expect(t).not.toContain(OPENAI_KEY);
    expect(openai.received.map((r) => r.headers.authorization)).toEqual([`Bearer ${OPENAI_KEY}`, `Bearer ${OPENAI_KEY}`]);
    for (const r of openai.received) expect(everything(r)).not.toContain("lazy-");
    // The Anthropic paths are refused on the OpenAI wire, and the other way round.
    const wrong = await messages(g.proxyUrl, { authorization: `Bearer ${g.placeholder}` }, false);
    expect(wrong.status).toBe(403);
    expect((await wrong.json()).error.type).toBe("permission_error");
    const rows = (await p.json(["stats", "audit"])).rows.filter((r: any) => r.profile === "codex");
    expect(rows.filter((r: any) => r.status === 200).map((r: any) => r.usage)).toEqual([
      { input: Mock.DEFAULT_USAGE.input, output: Mock.DEFAULT_USAGE.output, cacheRead: Mock.DEFAULT_USAGE.cacheRead, cacheWrite: 0 },
      { input: Mock.DEFAULT_USAGE.input, output: Mock.DEFAULT_USAGE.output, cacheRead: Mock.DEFAULT_USAGE.cacheRead, cacheWrite: 0 },
    ]);
  });
});

describe("identity comes from the grant", () => {
  test("the same identity minted twice returns the same placeholder; a spoofed x-lazy-task-id is ignored", async () => {
    const a = await p.json(["task", "add", "first task", "--code", "first-task"]);
    const b = await p.json(["task", "add", "second task", "--code", "second-task"]);
    const g1 = await p.grant({ role: "agent", task: "first-task" });
    const g2 = await p.grant({ role: "agent", task: a.id });
    expect(g2.placeholder).toBe(g1.placeholder);
    const other = await p.grant({ role: "agent", task: "second-task" });
    expect(other.placeholder).not.toBe(g1.placeholder);
    const codex = await p.grant({ role: "agent", task: "first-task", profile: "codex" });
    expect(codex.placeholder).not.toBe(g1.placeholder);

    anthropic.reset();
    const res = await messages(g1.proxyUrl, { "x-api-key": g1.placeholder, "x-lazy-task-id": b.id, "x-lazy-role": "builder" }, false);
    expect(res.status).toBe(200);
    expect(anthropic.received[0]!.headers["x-lazy-task-id"]).toBeUndefined();
    const audit = await p.json(["stats", "audit", "--task", "first-task"]);
    expect(audit.rows.at(-1)).toMatchObject({ taskId: a.id, taskRef: "first-task", role: "agent" });
    expect(audit.totals.requests).toBe(1);
    const spoofed = await p.json(["stats", "audit", "--task", "second-task"]);
    expect(spoofed.rows).toHaveLength(0);
    // A filter that names no task is refused, not read as "everything".
    const empty = await p.run(["stats", "audit", "--task", ""]);
    expect(empty.code).not.toBe(0);
    expect(empty.stderr).toContain("names no task");
  });
});

describe("failure semantics", () => {
  test("unknown or revoked placeholder: 401 authentication_error naming the remedy, counted with no role or task", async () => {
    anthropic.reset();
    const fake = "sk-ant-api03-lazy-" + "x".repeat(88) + "AA";
    const res = await messages(p.runtimeProxyUrl(), { "x-api-key": fake, "x-lazy-task-id": "deadbeef", "x-lazy-role": "agent" }, false);
    expect(res.status).toBe(401);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(res.headers.get("x-lazy-refusal")).toBe("placeholder_unknown");
    const body = await res.json();
    expect(body.error.type).toBe("authentication_error");
    // The words the harness shows name the remedy.
    expect(body.error.message).toContain("Start the task again");
    expect(anthropic.received).toHaveLength(0);
    // A caller lazy cannot attribute: counted per minute, source and reason, not a row (audit/refusals.ts).
    const counted = (await p.json(["stats", "audit"])).refused.at(-1);
    expect(counted).toMatchObject({ status: 401, source: "127.0.0.1", taskId: "", reason: "unknown or revoked placeholder" });
    expect(p.log()).toContain("401 POST /v1/messages unknown or revoked placeholder");
    expect(p.log()).not.toContain(fake);
  });

  test("no credential mapped: 401 naming the missing slot; never another account's credential", async () => {
    const q = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    await q.ok(["daemon", "start"]);
    anthropic.reset();
    const g = await q.grant({ role: "host", profile: "claude" }).catch((e) => e as Error);
    // A launch for a profile whose credential is missing fails before anything starts.
    expect(String(g)).toContain('needs the \\"anthropic\\" credential');
    expect(String(g)).toContain("lazy auth set anthropic");
    // A grant minted while the credential existed, then the credential removed:
    await q.setCredential("anthropic", API_KEY);
    const live = await q.grant({ role: "host", profile: "claude" });
    await q.ok(["auth", "rm", "anthropic"]);
    const res = await messages(live.proxyUrl, { "x-api-key": live.placeholder }, false);
    expect(res.status).toBe(401);
    expect(res.headers.get("x-lazy-refusal")).toBe("credential_not_stored");
    const body = await res.json();
    expect(body.error.message).toContain('no credential "anthropic"');
    expect(body.error.message).toContain("lazy auth set anthropic");
    expect(anthropic.received).toHaveLength(0);
    expect((await q.json(["stats", "audit"])).rows.at(-1)).toMatchObject({
      status: 401,
      role: "host",
      note: "credential anthropic missing",
    });
  });

  test("no credential: only the HEAD probes pass; anything else is 401, counted with no task or role. A real credential with no grant is forwarded as is, unattributed whatever its headers say", async () => {
    anthropic.reset();
    const url = p.runtimeProxyUrl();
    const probe = await fetch(`${url}/api/hello`, { method: "HEAD" });
    expect(probe.status).toBe(200);
    expect(anthropic.received[0]!.headers["x-api-key"]).toBeUndefined();
    expect(anthropic.received[0]!.headers.authorization).toBeUndefined();
    const bare = await messages(url, { "x-lazy-role": "agent" }, false);
    expect(bare.status).toBe(401);
    expect(bare.headers.get("x-lazy-refusal")).toBe("no_credential");
    expect(anthropic.received).toHaveLength(1);
    expect((await p.json(["stats", "audit"])).refused.at(-1)).toMatchObject({ status: 401, taskId: "", reason: "no credential" });
    const own = "sk-ant-oat01-hostsession-" + "h".repeat(40);
    const res = await messages(url, { authorization: `Bearer ${own}`, "x-lazy-role": "builder" }, false);
    expect(res.status).toBe(200);
    expect(anthropic.received[1]!.headers.authorization).toBe(`Bearer ${own}`);
    expect(anthropic.received[1]!.headers["x-lazy-role"]).toBeUndefined();
    const row = (await p.json(["stats", "audit"])).rows.at(-1);
    expect(row).toMatchObject({ status: 200, role: null, taskId: null, credential: null });
    // The host session's own credential is never written anywhere lazy keeps state.
    for (const f of p.allStateFiles()) expect(f.bytes.includes(own)).toBe(false);
  });
});
