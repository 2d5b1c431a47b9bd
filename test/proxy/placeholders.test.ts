import { describe, expect, test } from "bun:test";
import * as Placeholders from "../../src/proxy/identity/placeholders";

// The secret-scanner patterns Claude Code ships and OpenRouter's key shape (docs/wire.md, "Key shapes").
const anthropicApiKey = /\bsk-ant-api03-[a-zA-Z0-9_-]{93}AA$/;
const anthropicOAuth = /\bsk-ant-(?:oat|ort)\d{2}-[\w-]{20,}/;
const openaiKey = /^sk-[A-Za-z0-9_-]{8,200}T3BlbkFJ[A-Za-z0-9_-]{8,200}$/;

describe("shapes", () => {
  test("Anthropic API key: prefix, 93 body characters, AA", () => {
    const v = Placeholders.mint("anthropic-api-key");
    expect(v).toStartWith("sk-ant-api03-lazy-");
    expect(v).toMatch(anthropicApiKey);
    expect(v.length).toBe(108);
    // Claude Code picks its small model by `startsWith("sk-ant-") && slice(7,10) === "api"`.
    expect(v.slice(7, 10)).toBe("api");
  });

  test("Anthropic OAuth token", () => {
    const v = Placeholders.mint("anthropic-oauth");
    expect(v).toStartWith("sk-ant-oat01-lazy-");
    expect(v).toMatch(anthropicOAuth);
    expect(v.includes("sk-ant-oat")).toBe(true); // what Pi switches on
  });

  test("OpenAI project key", () => {
    const v = Placeholders.mint("openai");
    expect(v).toStartWith("sk-proj-lazy-");
    expect(v).toMatch(openaiKey);
  });

  test("OpenRouter and Cursor keys are hex after the marker", () => {
    expect(Placeholders.mint("openrouter")).toMatch(/^sk-or-v1-lazy-[0-9a-f]{64}$/);
    expect(Placeholders.mint("cursor")).toMatch(/^key_lazy_[0-9a-f]{64}$/);
    expect(Placeholders.mint("generic")).toMatch(/^lazy-[0-9a-f]{64}$/);
  });

  test("Cursor session token is a three-part base64url JWT that says what it is", () => {
    const v = Placeholders.sessionToken({ iat: 1_800_000_000, exp: 1_800_003_600 });
    const parts = v.split(".");
    expect(parts).toHaveLength(3);
    for (const p of parts) expect(p).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(v).toStartWith("eyJ");
    const payload = JSON.parse(Buffer.from(parts[1] as string, "base64url").toString());
    expect(payload).toMatchObject({ lazy: "placeholder", iat: 1_800_000_000, exp: 1_800_003_600 });
    expect(Placeholders.mint("cursor-session").split(".")).toHaveLength(3);
  });

  test("every shape is fresh each time and carries at least 128 random bits", () => {
    for (const shape of Placeholders.Shape.options) {
      const seen = new Set(Array.from({ length: 200 }, () => Placeholders.mint(shape)));
      expect(seen.size).toBe(200);
    }
    // Character-level entropy check on the random part of the densest and sparsest shapes.
    const random = Placeholders.mint("openrouter").slice("sk-or-v1-lazy-".length);
    expect(random.length * 4).toBeGreaterThanOrEqual(128);
    const body = Placeholders.mint("openai").replace("sk-proj-lazy-", "").replace("T3BlbkFJ", "");
    expect(body.length * 6).toBeGreaterThanOrEqual(128);
  });
});

describe("isPlaceholder", () => {
  test("recognises every shape it mints", () => {
    for (const shape of Placeholders.Shape.options) {
      for (let i = 0; i < 20; i++) expect(Placeholders.isPlaceholder(Placeholders.mint(shape))).toBe(true);
    }
  });

  test("recognises a truncated or hand-made placeholder, which must 401 rather than leak upstream", () => {
    for (const v of ["sk-ant-api03-lazy-abc", "sk-ant-oat01-lazy-x", "sk-proj-lazy-DDDD", "sk-or-v1-lazy-JJJJ", "key_lazy_1", "lazy-1"]) {
      expect(Placeholders.isPlaceholder(v)).toBe(true);
    }
  });

  test("real-looking credentials are not placeholders", () => {
    const real = [
      `sk-ant-api03-${"a".repeat(93)}AA`,
      `sk-ant-oat01-${"B".repeat(80)}`,
      "sk-proj-Ab12Cd34Ef56Gh78T3BlbkFJIj90Kl12Mn34",
      `sk-or-v1-${"0".repeat(64)}`,
      `key_${"f".repeat(64)}`,
      `sk-proj-abc-lazy-def`, // the marker elsewhere than right after the prefix
      "garbage",
      "ollama",
      "",
      "Bearer sk-ant-api03-lazy-abc",
      "sk-ant-api03-lazy-abc\n",
      // A real-looking session JWT (no lazy claim).
      `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString("base64url")}.${Buffer.from('{"sub":"user_1","type":"api_key_token"}').toString("base64url")}.c2ln`,
      "eyJ.not-base64!.x",
      "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln",
    ];
    for (const v of real) expect(Placeholders.isPlaceholder(v)).toBe(false);
  });
});
