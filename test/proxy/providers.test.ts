/**
 * Profiles on Ollama and OpenRouter, told apart by the endpoint's host (docs: "Per-target
 * credentials are data"): a local Ollama gets no credential and needs no Anthropic one stored;
 * hosted Ollama bills the `ollama` credential and OpenRouter the `openrouter` one, both as
 * Bearer only, reached here through `[proxy.upstreams]` origin overrides on loopback. Ollama's
 * admin routes are refused before they reach the server (docs/wire.md, "Ollama").
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { providerMocks } from "../helpers/fixtures";
import { cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const OLLAMA_KEY = "ollama-REAL-" + "q".repeat(40);
const OPENROUTER_KEY = "sk-or-v1-" + "0123456789abcdef".repeat(4);

let ollama: Mock.MockProvider;
let hosted: Mock.MockProvider;
let openrouter: Mock.MockProvider;

beforeAll(async () => ({ local: ollama, hosted, openrouter } = await providerMocks()));

afterAll(() => cleanupAll(ollama, hosted, openrouter));

const messages = (url: string, headers: Record<string, string>, path = "/v1/messages?beta=true") =>
  fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify({ model: "llama3", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });

/** A Chat Completions request on `model` with the placeholder as Bearer: the answer's text, once it came back 200. */
async function chatReply(url: string, placeholder: string, model: string): Promise<string> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${placeholder}` },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  return (await res.json()).choices[0].message.content;
}

const credentialHeaders = (r: Mock.Received) => [r.headers.authorization, r.headers["x-api-key"]].filter((v) => v !== undefined);

describe("a local Ollama profile", () => {
  test("launches with no credential stored, and the server receives none, on either wire", async () => {
    ollama.reset();
    const p = new Project({
      toml: `[profiles.local]\nharness = "claude"\nendpoint = "${ollama.url}"\n\n[profiles.local-oai]\nharness = "pi"\nwire = "openai"\nendpoint = "${ollama.url}/v1"\n`,
    });
    expect((await p.json<any>(["auth", "list"])).credentials).toEqual([]);
    const g = await p.grant({ role: "host", profile: "local" });
    expect(g.credential).toBeNull();
    const res = await messages(g.proxyUrl, { "x-api-key": g.placeholder });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain(Mock.DEFAULT_REPLY_TEXT);

    const o = await p.grant({ role: "host", profile: "local-oai" });
    expect(await chatReply(o.proxyUrl, o.placeholder, "llama3")).toBe(Mock.DEFAULT_REPLY_TEXT);

    const seen = await ollama.waitFor(2);
    expect(seen.map((r) => `${r.method} ${r.path}`)).toEqual(["POST /v1/messages", "POST /v1/chat/completions"]);
    for (const r of seen) {
      expect(credentialHeaders(r)).toEqual([]);
      expect(JSON.stringify(r.headers) + r.body).not.toContain("-lazy-");
    }
  });

  test("/api/delete, /api/pull and the rest of Ollama's admin API get 403 and never reach the server", async () => {
    ollama.reset();
    const p = new Project({
      toml: `[profiles.local]\nharness = "claude"\nendpoint = "${ollama.url}"\n\n[profiles.local-oai]\nharness = "pi"\nwire = "openai"\nendpoint = "${ollama.url}"\n`,
    });
    await p.ok(["auth", "list"]);
    for (const profile of ["local", "local-oai"]) {
      const g = await p.grant({ role: "host", profile });
      for (const [method, path] of [
        ["DELETE", "/api/delete"],
        ["POST", "/api/pull"],
        ["POST", "/api/create"],
        ["POST", "/api/push"],
        ["POST", "/api/copy"],
        ["GET", "/api/tags"],
        ["POST", "/api/generate"],
      ] as const) {
        const res = await fetch(`${g.proxyUrl}${path}`, {
          method,
          headers: { "content-type": "application/json", "x-api-key": g.placeholder, authorization: `Bearer ${g.placeholder}` },
          body: method === "GET" ? undefined : JSON.stringify({ model: "llama3" }),
        });
        expect(res.status, `${profile} ${method} ${path}`).toBe(403);
        expect(JSON.stringify(await res.json())).toContain(`lazy's proxy refuses ${method} ${path}`);
      }
    }
    // lazy writes a request's audit row when it is done with it: once all 14 are there, nothing more goes out.
    const rows = async () => (await p.json(["stats", "audit"])).rows.filter((r: any) => r.path.startsWith("/api/")).length;
    await until(async () => (await rows()) >= 14, 10_000, "the 14 refusals' audit rows");
    expect(ollama.received).toEqual([]);
    const audit = (await p.ok(["stats", "audit"])).stdout;
    expect(audit).toContain("/api/delete");
    expect(audit).toContain("/api/pull");
  });
});

describe("hosted Ollama and OpenRouter, through origin overrides", () => {
  const toml = () =>
    `[proxy.upstreams]\nollama = "${hosted.url}"\nopenrouter = "${openrouter.url}"\n\n` +
    `[profiles.cloud]\nharness = "claude"\nendpoint = "https://ollama.com"\n\n` +
    `[profiles.router]\nharness = "claude"\nendpoint = "https://openrouter.ai/api"\n\n` +
    `[profiles.router-oai]\nharness = "codex"\nendpoint = "https://openrouter.ai/api/v1"\n`;

  test("hosted Ollama needs the ollama credential, and gets it as Bearer only", async () => {
    hosted.reset();
    const p = new Project({ toml: toml() });
    await p.ok(["auth", "list"]);
    const missing = await p.grant({ role: "host", profile: "cloud" }).catch((e: Error) => e);
    expect(String(missing)).toContain("lazy auth set ollama");
    await p.setCredential("ollama", OLLAMA_KEY);
    const g = await p.grant({ role: "host", profile: "cloud" });
    expect(g.credential).toBe("ollama");
    expect(g.envVar).toBe("ANTHROPIC_AUTH_TOKEN");
    expect(g.placeholder).not.toContain(OLLAMA_KEY);
    const res = await messages(g.proxyUrl, { authorization: `Bearer ${g.placeholder}` });
    expect(res.status).toBe(200);
    const [r] = await hosted.waitFor(1);
    expect(r!.path).toBe("/v1/messages");
    expect(r!.headers.authorization).toBe(`Bearer ${OLLAMA_KEY}`);
    expect(r!.headers["x-api-key"]).toBeUndefined();
    // Its admin API is refused as a local one's is.
    const pull = await fetch(`${g.proxyUrl}/api/pull`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.placeholder}` },
      body: "{}",
    });
    expect(pull.status).toBe(403);
    await until(
      async () => (await p.json(["stats", "audit"])).rows.some((r: any) => r.path === "/api/pull"),
      10_000,
      "the refusal's audit row",
    );
    expect(hosted.received).toHaveLength(1);
  });

  test("OpenRouter bills the openrouter credential as Bearer on either wire, behind an sk-or-v1- placeholder", async () => {
    openrouter.reset();
    const p = new Project({ toml: toml() });
    await p.setCredential("openrouter", OPENROUTER_KEY);
    const g = await p.grant({ role: "host", profile: "router" });
    expect(g.credential).toBe("openrouter");
    expect(g.envVar).toBe("ANTHROPIC_AUTH_TOKEN");
    expect(g.placeholder).toMatch(/^sk-or-v1-lazy-[0-9a-f]{64}$/);
    // Claude Code sends an ANTHROPIC_AUTH_TOKEN as Bearer; x-api-key would do as well.
    expect((await messages(g.proxyUrl, { authorization: `Bearer ${g.placeholder}` })).status).toBe(200);
    expect((await messages(g.proxyUrl, { "x-api-key": g.placeholder })).status).toBe(200);

    const o = await p.grant({ role: "host", profile: "router-oai" });
    expect(o.credential).toBe("openrouter");
    expect(o.envVar).toBe("OPENAI_API_KEY");
    expect(o.placeholder).toMatch(/^sk-or-v1-lazy-[0-9a-f]{64}$/);
    expect(await chatReply(o.proxyUrl, o.placeholder, "openai/gpt-5")).toBe(Mock.DEFAULT_REPLY_TEXT);

    const seen = await openrouter.waitFor(3);
    expect(seen.map((r) => r.path)).toEqual(["/api/v1/messages", "/api/v1/messages", "/api/v1/chat/completions"]);
    for (const r of seen) {
      expect(r.headers.authorization).toBe(`Bearer ${OPENROUTER_KEY}`);
      expect(r.headers["x-api-key"]).toBeUndefined();
      expect(JSON.stringify(r.headers) + r.body).not.toContain("sk-or-v1-lazy-");
    }
  });
});
