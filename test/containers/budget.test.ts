/**
 * [budget] and lazy stats budget: tokens and cost counted per task, profile, credential and
 * day; a task that reaches its budget is stopped at its next request (the agent is told which
 * budget) and waits with reason budget until a human raises it. Real Docker and Claude Code
 * for the turn; the mock provider bills 47 tokens a request (21 in, 13 out, 8 + 5 cache).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TEST_IMAGES } from "../helpers/env";
import { dockerAnthropic, launched, settled } from "../helpers/fixtures";
import { cleanupAll, Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-BUDGET-" + "b".repeat(75) + "AA";
let anthropic: Mock.MockProvider;

beforeAll(async () => {
  anthropic = await dockerAnthropic();
});
afterAll(() => cleanupAll(anthropic));

async function project(budget: string): Promise<Project> {
  const p = new Project({
    toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[profiles.claude]\nmodel = "claude-sonnet-4-5"\n\n[budget]\n${budget}\n`,
  });
  Bun.spawnSync(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
    cwd: p.root,
  });
  await p.setCredential("anthropic", KEY);
  return p;
}

async function ask(url: string, placeholder: string, model = "claude-sonnet-4-5") {
  const res = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": placeholder },
    body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  return { status: res.status, text: await res.text() };
}

describe("budgets", () => {
  test("a task past per_task_tokens is stopped at its next request, told why; lazy task budget +N lets it through; stats budget counts and prices", async () => {
    const p = await project("per_task_tokens = 10");
    anthropic.reset();
    await p.ok(["task", "add", "spend", "--code", "spender"]);
    const g = await p.grant({ role: "agent", task: "spender" });
    expect((await ask(g.proxyUrl, g.placeholder)).status).toBe(200);
    const stopped = await until(
      async () => {
        const r = await ask(g.proxyUrl, g.placeholder);
        return r.status === 403 ? r : undefined;
      },
      10_000,
      "the budget to stop the task",
    );
    expect(JSON.parse(stopped.text).error.message).toContain("lazy's proxy stopped this turn: task spender reached its token budget (");
    expect(JSON.parse(stopped.text).error.message).toContain("of 10 tokens); a human can raise it: lazy task budget spender +N");
    const upstreamCalls = anthropic.received.filter((x) => x.method === "POST").length;
    const raised = await p.ok(["task", "budget", "spender", "+100000"]);
    expect(raised.stdout).toContain("Task spender's budget is now 100010 tokens");
    expect((await ask(g.proxyUrl, g.placeholder)).status).toBe(200);
    expect(anthropic.received.filter((x) => x.method === "POST").length).toBe(upstreamCalls + 1); // the refused one never went out

    const b = await p.json(["stats", "budget"]);
    const t = b.tasks.find((x: any) => x.code === "spender");
    expect(t.tokens % 47).toBe(0);
    expect(t.tokens).toBeGreaterThanOrEqual(94);
    const requests = t.tokens / 47;
    expect(t.usd).toBeCloseTo((requests * (21 * 3 + 13 * 15 + 8 * 0.3 + 5 * 3.75)) / 1e6, 10);
    expect(t.limit.tokens).toBe(100010);
    expect(b.today.tokens).toBe(t.tokens);
    expect(b.profiles[0]).toMatchObject({ profile: "claude", tokens: t.tokens });
    expect(b.models[0]).toMatchObject({ model: "claude-sonnet-4-5", priced: true, tokens: t.tokens });
    expect(b.credentials[0]).toMatchObject({ credential: "anthropic", tokens: t.tokens });
    const text = (await p.ok(["stats", "budget"])).stdout;
    expect(text).toContain("Budget: per task 10 tokens");
    expect(text).toMatch(/spender\s+\d+\s+\$0\.00\s+100010 tokens/);
  }, 60_000);

  test("a model lazy has no price for shows tokens only, never a made-up price", async () => {
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[profiles.claude]\nmodel = "claude-unknown-9"\n` });
    await p.setCredential("anthropic", KEY);
    await p.ok(["task", "add", "spend", "--code", "unpriced"]);
    const g = await p.grant({ role: "agent", task: "unpriced" });
    // Priced by the model served (the mock serves the one asked), not the profile's.
    expect((await ask(g.proxyUrl, g.placeholder, "claude-unknown-9")).status).toBe(200);
    const b = await until(
      async () => {
        const r = await p.json(["stats", "budget"]);
        return r.tasks.length ? r : undefined;
      },
      10_000,
      "the counters",
    );
    expect(b.tasks[0]).toMatchObject({ code: "unpriced", tokens: 47, usd: null, unpriced: ["claude-unknown-9"] });
    expect((await p.ok(["stats", "budget"])).stdout).toContain("tokens only (no price known for claude-unknown-9)");
  }, 30_000);

  test("a real turn that crosses per_task_tokens ends waiting with reason budget; raising it lets the next turn run", async () => {
    const p = await project("per_task_tokens = 10");
    anthropic.answer({ text: "Spent some tokens." });
    await launched(p, "capped", "say something");
    const waiting = await until(
      async () => {
        const s = await p.json(["task", "show", "capped"]);
        return s.task.status === "waiting" ? s : s.task.status === "running" ? undefined : s;
      },
      240_000,
      "the turn to end",
    );
    expect(waiting.task.status).toBe("waiting");
    const last = waiting.events.filter((e: any) => e.kind === "status").at(-1);
    expect(last.data).toMatchObject({ reason: "budget", scope: "task", unit: "tokens", limit: 10 });
    const refused = await p.run(["send", "capped", "go on"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("reached its token budget");
    await p.ok(["task", "budget", "capped", "+100000"]);
    anthropic.reply = { text: "Second turn ran." };
    await p.ok(["send", "capped", "go on"]);
    const done = (await settled(p, "capped", 240_000)).task;
    expect(done.status).toBe("done");
    expect((await p.ok(["logs", "capped"])).stdout).toContain("Second turn ran.");
  }, 600_000);
});
