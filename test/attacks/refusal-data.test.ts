/**
 * Refusals are data (a code and its facts) worded at the edges: a hostile local process that
 * probes them learns the refusal's code and its words, never a secret. The proxy's answer names
 * its code in x-lazy-refusal and echoes nothing the caller sent (its credential, a placeholder);
 * the API's answer carries the facts, and no fact is a credential's value.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { anthropicHost } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-REFUSALDATA-${"r".repeat(70)}AA`;
const OWN = `sk-ant-api03-ATTACKERSOWN-${"a".repeat(69)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => ({ anthropic, p } = await anthropicHost(KEY)));
afterAll(() => cleanupAll(anthropic));

async function post(headers: Record<string, string>): Promise<{ status: number; code: string | null; said: string }> {
  const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 1, messages: [{ role: "user", content: "x" }] }),
  });
  const said = JSON.stringify([...res.headers]) + (await res.text());
  return { status: res.status, code: res.headers.get("x-lazy-refusal"), said };
}

describe("a hostile local process probing lazy's refusals", () => {
  test("the proxy's refusals name their code and echo nothing the caller sent, nor the stored key", async () => {
    anthropic.reset();
    const g = await p.grant({ role: "host" });
    const fake = `sk-ant-api03-lazy-${"f".repeat(88)}AA`;
    const cases: { headers: Record<string, string>; code: string }[] = [
      { headers: {}, code: "no_credential" },
      { headers: { "x-api-key": fake }, code: "placeholder_unknown" },
      { headers: { "x-api-key": OWN, authorization: `Bearer ${g.placeholder}` }, code: "placeholder_beside_credential" },
    ];
    for (const c of cases) {
      const r = await post(c.headers);
      expect(r.status, r.said).toBe(401);
      expect(r.code).toBe(c.code);
      for (const secret of [KEY, OWN, fake, g.placeholder]) expect(r.said).not.toContain(secret);
    }
    expect(anthropic.received).toEqual([]);
  });

  test("the API's refusal carries its code and facts (names, never a value): a profile whose credential is not stored", async () => {
    const err = await p.grant({ role: "host", profile: "codex" }).then(
      (g) => `granted: ${g.envVar}`,
      (e: Error) => e.message,
    );
    const body = JSON.parse(err.slice(err.indexOf("{")));
    expect(body.error).toMatchObject({
      code: "credential_missing",
      facts: { reason: "credential_not_stored", profile: "codex", credential: "openai" },
    });
    // The API's words, made from those facts, name the cause and the remedy.
    expect(body.error.message).toContain('needs the "openai" credential, which is not stored: run lazy auth set openai');
    expect(err).not.toContain(KEY);
  });
});
