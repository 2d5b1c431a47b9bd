/**
 * Spending priced by the profile's model, not the one served (issue 35, finding 6), attacked by
 * a hostile agent with its own placeholder through the real proxy (the compiled binary) to a
 * real mock provider on loopback, which answers with the model it was asked for:
 *  - on a profile that pins its models, a request for another (plainly, as a second `Model` or
 *    escaped `mod\u0065l` key beside an allowed one, or with no top-level model at all) is
 *    refused with 403 in the wire's shape, naming the profile and the allowed models, audited as
 *    a refusal, and the provider receives nothing;
 *  - on a profile whose model is sonnet, an agent asking for opus is charged opus rates in
 *    `lazy stats budget` and `lazy compare` (main charged sonnet's, five times less);
 *  - a later edit of the profile's model does not re-price the earlier task.
 * On main the `models` key does not exist (the config is refused) and both prices were the
 * profile's, so every test here fails there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { upstream } from "../helpers/fixtures";
import { cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-${"p".repeat(80)}AA`;
const OPENAI_KEY = `sk-proj-${"q".repeat(60)}`;
// The mock bills 21 input, 13 output, 8 cache-read and 5 cache-write tokens a request (47).
const OPUS = (21 * 15 + 13 * 75 + 8 * 1.5 + 5 * 18.75) / 1e6;
const SONNET = (21 * 3 + 13 * 15 + 8 * 0.3 + 5 * 3.75) / 1e6;
const HAIKU = (21 * 1 + 13 * 5 + 8 * 0.1 + 5 * 1.25) / 1e6;

let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;

const toml = (model: string) =>
  `${upstream(anthropic.url)}openai = "${openai.url}"\n\n` +
  `[profiles.claude]\nmodel = "${model}"\n\n` +
  `[profiles.pinned]\nharness = "claude"\nmodel = "claude-sonnet-4-5"\nmodels = ["claude-sonnet-4-5", "claude-haiku-4-5"]\n\n` +
  `[profiles.gpt]\nharness = "codex"\nmodel = "gpt-5-codex"\nmodels = ["gpt-5-codex"]\n`;

beforeAll(async () => {
  [anthropic, openai] = await Promise.all([Mock.anthropic(), Mock.openai()]);
  p = new Project({ toml: toml("claude-sonnet-4-5") });
  await p.setCredential("anthropic", KEY);
  await p.setCredential("openai", OPENAI_KEY);
});
afterAll(() => cleanupAll(anthropic, openai));

/** A Messages request with this raw JSON body, on a placeholder. */
async function messages(g: { proxyUrl: string; placeholder: string }, body: string) {
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body,
  });
  return { status: res.status, text: await res.text() };
}

const ask = (model: string, extra = "") =>
  `{"model":${JSON.stringify(model)},"max_tokens":10,"messages":[{"role":"user","content":"hi"}]${extra}}`;

/** Wait until the audit's counters hold this task's tokens (they are written a batch at a time). */
const spent = (code: string) =>
  until(
    async () => {
      const b = await p.json(["stats", "budget"]);
      const t = b.tasks.find((x: any) => x.code === code);
      return t && t.tokens > 0 ? { b, t } : undefined;
    },
    10_000,
    `${code}'s tokens in the counters`,
  );

describe("a profile that pins its models", () => {
  test("a request for another model is refused with 403 naming the profile and its models; the provider receives nothing", async () => {
    await p.ok(["task", "add", "pinned agent", "--code", "pin", "--profile", "pinned"]);
    const g = await p.grant({ role: "agent", task: "pin" });
    anthropic.reset();
    const attempts = [
      ask("claude-opus-4-1"),
      // An allowed model first, the dear one again under a key other parsers read as `model`.
      ask("claude-sonnet-4-5", ',"Model":"claude-opus-4-1"'),
      ask("claude-sonnet-4-5", ',"mod\\u0065l":"claude-opus-4-1"'),
      // A nested model only: the upstream (OpenRouter) would pick its default.
      `{"max_tokens":10,"metadata":{"model":"claude-sonnet-4-5"},"messages":[{"role":"user","content":"hi"}]}`,
    ];
    for (const body of attempts) {
      const r = await messages(g, body);
      expect(r.status, body).toBe(403);
      const err = JSON.parse(r.text);
      expect(err.type).toBe("error");
      expect(err.error.type).toBe("permission_error");
      expect(err.error.message).toContain("profile pinned allows only claude-sonnet-4-5, claude-haiku-4-5");
      expect(err.error.message).toContain("add the model to models under [profiles.pinned] in lazy.toml");
    }
    expect(JSON.parse((await messages(g, attempts[0]!)).text).error.message).toContain('model "claude-opus-4-1" is not allowed');
    expect(anthropic.received.filter((x) => x.method === "POST")).toEqual([]);

    // An allowed model (and its dated snapshot) goes through.
    expect((await messages(g, ask("claude-haiku-4-5"))).status).toBe(200);
    expect((await messages(g, ask("claude-sonnet-4-5-20250929"))).status).toBe(200);
    expect(anthropic.received.map((x) => JSON.parse(x.body).model)).toEqual(["claude-haiku-4-5", "claude-sonnet-4-5-20250929"]);

    // Audited as refusals, with the model asked; the allowed ones with the model served.
    const audit = await until(
      async () => {
        const a = await p.json<{ rows: any[] }>(["stats", "audit", "--task", "pin", "--json"]);
        return a.rows.length >= 7 ? a.rows : undefined;
      },
      10_000,
      "the rows of pin",
    );
    const refused = audit.filter((r) => r.status === 403);
    expect(refused.length).toBe(5);
    for (const r of refused) expect(r.note).toContain("model refused");
    expect(refused.some((r) => r.modelAsked === "claude-opus-4-1")).toBe(true);
    expect(
      audit
        .filter((r) => r.status === 200)
        .map((r) => r.modelServed)
        .sort(),
    ).toEqual(["claude-haiku-4-5", "claude-sonnet-4-5-20250929"]);
  }, 60_000);

  test("the OpenAI wire alike: a Responses request for another model is refused in OpenAI's error shape; the provider receives nothing", async () => {
    await p.ok(["task", "add", "pinned codex", "--code", "pin-gpt", "--profile", "gpt"]);
    const g = await p.grant({ role: "agent", task: "pin-gpt" });
    openai.reset();
    const res = await fetch(`${g.proxyUrl}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${g.placeholder}` },
      body: JSON.stringify({ model: "gpt-5", input: "hi" }),
    });
    expect(res.status).toBe(403);
    const err = (await res.json()) as any;
    expect(err.error.message).toContain('model "gpt-5" is not allowed; profile gpt allows only gpt-5-codex');
    expect(openai.received).toEqual([]);
  }, 60_000);
});

describe("spending is priced by the model served", () => {
  test("opus asked on a sonnet profile is charged as opus in lazy stats budget and lazy compare; a later edit of the profile's model re-prices nothing", async () => {
    const g0 = await p.json(["task", "add", "--n", "2", "--profile", "claude", "Spend", "--code", "dear"]);
    expect(g0.tasks.map((t: any) => t.code)).toEqual(["dear-1", "dear-2"]);
    const g = await p.grant({ role: "agent", task: "dear-1" });
    anthropic.reset();
    // The profile says sonnet; the agent asks for opus, and the provider serves opus.
    expect((await messages(g, ask("claude-opus-4-1"))).status).toBe(200);
    expect(JSON.parse(anthropic.received[0]!.body).model).toBe("claude-opus-4-1");

    const { b, t } = await spent("dear-1");
    expect(t.tokens).toBe(47);
    expect(t.usd).toBeCloseTo(OPUS, 10);
    expect(t.usd).not.toBeCloseTo(SONNET, 10);
    expect(b.models.find((m: any) => m.model === "claude-opus-4-1")).toMatchObject({ tokens: 47, priced: true });
    const c = await p.json(["compare", "dear", "--no-check"]);
    expect(c.candidates.find((x: any) => x.code === "dear-1").usd).toBeCloseTo(OPUS, 10);
    expect((await p.ok(["compare", "dear", "--no-check"])).stdout).toMatch(/dear-1\s.*\$0\.0014/);

    // The person changes the profile's model afterwards: the task was served opus all the same.
    p.writeToml(toml("claude-haiku-4-5"));
    const after = await p.json(["stats", "budget"]);
    expect(after.tasks.find((x: any) => x.code === "dear-1").usd).toBeCloseTo(OPUS, 10);
    expect(after.tasks.find((x: any) => x.code === "dear-1").usd).not.toBeCloseTo(HAIKU, 10);
    expect((await p.json(["compare", "dear", "--no-check"])).candidates[0].usd).toBeCloseTo(OPUS, 10);
  }, 60_000);

  test("a model lazy has no price for is named where its cost would be, never $0 or a dash", async () => {
    await p.ok(["task", "add", "unpriced", "--code", "odd"]);
    const g = await p.grant({ role: "agent", task: "odd" });
    expect((await messages(g, ask("claude-mystery-9"))).status).toBe(200);
    const { t } = await spent("odd");
    expect(t).toMatchObject({ tokens: 47, usd: null, unpriced: ["claude-mystery-9"] });
    const text = (await p.ok(["stats", "budget"])).stdout;
    expect(text).toMatch(/odd\s+47\s+no price known for claude-mystery-9/);
    expect(text).toContain("tokens only (no price known for claude-mystery-9)");
  }, 60_000);
});
