/**
 * Hostile model names against the price table (issue 37, point 8), through the real binary and a
 * real loopback provider that answers with whatever model name it is told to, as a compromised or
 * odd router would, to a hostile agent's requests:
 *  - a name that starts like a cheap model with a suffix of its own (claude-haiku-4-5-max, a dated
 *    snapshot with more after it, a dotted haiku under another vendor) is not priced as that
 *    model: it is named, "no price known";
 *  - a served name with terminal escapes or 10,000 characters is never kept nor printed, and the
 *    request is not priced by the cheaper model the agent asked for either: its tokens read
 *    "tokens of no named model";
 *  - what the agent asks for does not matter when the provider names what it served.
 * On main the escaped and huge names were priced by the model asked (haiku): that test fails there.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { upstream } from "../helpers/fixtures";
import { cleanupAll, Project, until } from "../helpers/lazy";

const KEY = `sk-ant-api03-${"h".repeat(80)}AA`;
const HAIKU = (21 * 1 + 13 * 5 + 8 * 0.1 + 5 * 1.25) / 1e6;

let served = "";
let server: ReturnType<typeof Bun.serve>;
let p: Project;

beforeAll(async () => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(r) {
      await r.text();
      return Response.json({
        id: "msg_01evil",
        type: "message",
        role: "assistant",
        model: served,
        content: [{ type: "text", text: "ok" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 21, output_tokens: 13, cache_read_input_tokens: 8, cache_creation_input_tokens: 5 },
      });
    },
  });
  p = new Project({ toml: upstream(`http://127.0.0.1:${server.port}`) });
  await p.setCredential("anthropic", KEY);
});
afterAll(async () => {
  server.stop(true);
  await cleanupAll();
});

/** A task whose one request asks for haiku and is answered as served by `name`; its `lazy task show --json`. */
async function spend(code: string, name: string): Promise<any> {
  await p.ok(["task", "add", code, "--code", code]);
  const g = await p.grant({ role: "agent", task: code });
  served = name;
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body: JSON.stringify({ model: "claude-haiku-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
  return until(
    async () => {
      const r = await p.json(["task", "show", code]);
      return r.spent.tokens >= 47 ? r : undefined;
    },
    10_000,
    `${code}'s tokens`,
  );
}

test("a cheap model's name with a suffix of its own is not priced as that model: named, no price known", async () => {
  for (const [code, name] of [
    ["suffix", "claude-haiku-4-5-max"],
    ["dated-more", "claude-haiku-4-5-20251001-x"],
    ["vendor", "mistral/claude-haiku-4.5"],
    ["upper", "Claude-Haiku-4-5"],
  ] as const) {
    const r = await spend(code, name);
    expect(r.spent, name).toMatchObject({ usd: null, knownUsd: 0, unpriced: [name] });
    expect((await p.ok(["task", "show", code])).stdout).toContain(`Cost:    no price known for ${name}`);
  }
  // The rule's own cases: a dated snapshot and a router's spelling of the same model are it.
  expect((await spend("snapshot", "claude-haiku-4-5-20251001")).spent.usd).toBeCloseTo(HAIKU, 10);
  expect((await spend("routed", "anthropic/claude-haiku-4.5")).spent.usd).toBeCloseTo(HAIKU, 10);
}, 120_000);

test("a served name with terminal escapes or 10,000 characters is never printed, nor priced as the cheaper model asked", async () => {
  for (const [code, name] of [
    ["escape", "claude-opus-4-1\u001b]0;pwned\u0007\u001b[2J"],
    ["huge", `claude-opus-4-1-${"x".repeat(10_000)}`],
    ["spaced", "claude-opus-4-1 (cheap)"],
  ] as const) {
    const r = await spend(code, name);
    expect(r.spent, code).toMatchObject({ tokens: 47, usd: null, knownUsd: 0, unpriced: [""] });
    const show = await p.ok(["task", "show", code]);
    expect(show.stdout).toContain("Cost:    tokens of no named model");
    for (const out of [
      show.stdout,
      show.stderr,
      (await p.ok(["stats", "budget"])).stdout,
      (await p.ok(["stats", "audit", "--task", code])).stdout,
    ]) {
      expect(out).not.toContain("\u001b");
      expect(out).not.toContain("pwned");
      expect(out).not.toContain("xxxxxxxxxx");
    }
  }
  const audit = await p.json(["stats", "audit", "--task", "escape"]);
  expect(audit.rows.find((x: any) => x.status === 200)).toMatchObject({ modelAsked: "claude-haiku-4-5", modelServed: "" });
}, 120_000);

test("a real model lazy has no price for does not spend past a dollar budget: its tokens count at the dearest rates known", async () => {
  const q = new Project({ toml: `${upstream(`http://127.0.0.1:${server.port}`)}\n[budget]\nper_task_usd = 0.001\n` });
  await q.setCredential("anthropic", KEY);
  await q.ok(["task", "add", "dear", "--code", "dear"]);
  const g = await q.grant({ role: "agent", task: "dear" });
  // The agent asks for (and is served) a real, dear model the table has no price for.
  served = "claude-3-opus-20240229";
  const ask = async () => {
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
      body: JSON.stringify({ model: served, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    return { status: res.status, text: await res.text() };
  };
  expect((await ask()).status).toBe(200);
  // 47 tokens at the dearest rates ($15/$75 per million, cache at $1.50/$18.75) is $0.0014: past $0.001.
  const refused = await until(
    async () => {
      const r = await ask();
      return r.status === 403 ? r : undefined;
    },
    10_000,
    "the budget's refusal",
  );
  expect(refused.text).toContain("reached its budget");
  expect(refused.text).toContain("claude-3-opus-20240229 (no price known)");
  const r = await q.json(["task", "show", "dear"]);
  // What is shown stays honest: no dollar figure made up for the model.
  expect(r.spent).toMatchObject({ usd: null, knownUsd: 0, unpriced: ["claude-3-opus-20240229"] });
  expect(r.spent.budgetUsd).toBeGreaterThan(0.001);
}, 120_000);
