/**
 * Honest cost (issue 37, point 8), through the real binary and a real loopback provider that
 * answers with the model it chooses to serve:
 *  - the built-in claude profile names no model, and a task is still priced by the model served
 *    (claude-sonnet-4-6, which Claude Code 2.1 asks for by default; main had no price for it);
 *  - `lazy task show` has a Cost line and its --json a `spent` object, per model served;
 *  - a task counted once keeps its dollars when [prices] or the profile's model change later;
 *    new requests take the new price;
 *  - a served model with no price reads "no price known for MODEL" in the CLI, the JSON (usd
 *    null, `unpriced` naming it) and the dashboard's task, home and usage pages (Chromium);
 *  - a best-of-N candidate that never ran shows "–" in lazy compare, not $0.0000.
 * On main the [prices] key is refused, task show has no cost, sonnet 4.6 has no price and a
 * never-run candidate shows $0.0000: every test here fails there.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeBrowser, shot, signedIn } from "../dashboard/browser";
import { upstream } from "../helpers/fixtures";
import { cleanupAll, Project, until } from "../helpers/lazy";

const KEY = `sk-ant-api03-${"c".repeat(80)}AA`;
// Each answer bills 21 input, 13 output, 8 cache-read and 5 cache-write tokens (47).
const at = (input: number, output: number, cacheRead: number, cacheWrite: number) =>
  (21 * input + 13 * output + 8 * cacheRead + 5 * cacheWrite) / 1e6;
const SONNET_46 = at(3, 15, 0.3, 3.75);
const OWN = at(100, 200, 100, 100);

/** What the provider says it served next (null: the model asked). */
let served: string | null = null;
let server: ReturnType<typeof Bun.serve>;
let p: Project;

const base = () => upstream(`http://127.0.0.1:${server.port}`);

beforeAll(async () => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(r) {
      if (r.method !== "POST" || new URL(r.url).pathname !== "/v1/messages") return new Response("not found", { status: 404 });
      const body = (await r.json()) as { model?: string };
      return Response.json({
        id: "msg_01cost",
        type: "message",
        role: "assistant",
        model: served ?? body.model,
        content: [{ type: "text", text: "ok" }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 21, output_tokens: 13, cache_read_input_tokens: 8, cache_creation_input_tokens: 5 },
      });
    },
  });
  p = new Project({ toml: base() });
  await p.setCredential("anthropic", KEY);
});
afterAll(async () => {
  await closeBrowser();
  server.stop(true);
  await cleanupAll();
});

/** One Messages request on a task's placeholder, asking for `model`. */
async function ask(task: string, model: string): Promise<void> {
  const g = await p.grant({ role: "agent", task });
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  expect(res.status).toBe(200);
  await res.text();
}

/** `lazy task show T --json` once its counters hold `tokens`. */
const shown = (code: string, tokens = 47) =>
  until(
    async () => {
      const r = await p.json(["task", "show", code]);
      return r.spent?.tokens >= tokens ? r : undefined;
    },
    10_000,
    `${code}'s ${tokens} tokens in the counters`,
  );

describe("cost by the model served, kept when counted", () => {
  test("the built-in profile (no model) is priced by the model served; task show has a Cost line and a spent object", async () => {
    await p.ok(["task", "add", "priced", "--code", "priced"]);
    served = null;
    await ask("priced", "claude-sonnet-4-6");
    const r = await shown("priced");
    expect(r.spent).toMatchObject({ requests: 1, tokens: 47, unpriced: [] });
    expect(r.spent.usd).toBeCloseTo(SONNET_46, 10);
    expect(r.spent.models).toHaveLength(1);
    expect(r.spent.models[0]).toMatchObject({ model: "claude-sonnet-4-6", tokens: 47 });
    const text = (await p.ok(["task", "show", "priced"])).stdout;
    expect(text).toContain("Cost:    $0.0003 (47 tokens in 1 request(s); claude-sonnet-4-6)");
  }, 60_000);

  test("a [prices] entry and a new profile model later re-price nothing counted; later requests take the new price", async () => {
    const before = (await p.json(["stats", "budget"])).tasks.find((t: any) => t.code === "priced").usd;
    expect(before).toBeCloseTo(SONNET_46, 10);
    p.writeToml(`${base()}\n[profiles.claude]\nmodel = "claude-opus-4-1"\n\n[prices."claude-sonnet-4-6"]\ninput = 100\noutput = 200\n`);
    // A fresh daemon reads the new lazy.toml for certain (a running one reloads it too).
    await p.ok(["daemon", "stop"]);
    const old = await shown("priced");
    expect(old.spent.usd).toBeCloseTo(SONNET_46, 10);
    expect((await p.ok(["task", "show", "priced"])).stdout).toContain("Cost:    $0.0003 ");
    expect((await p.json(["stats", "budget"])).tasks.find((t: any) => t.code === "priced").usd).toBeCloseTo(SONNET_46, 10);

    await p.ok(["task", "add", "later", "--code", "later"]);
    await ask("later", "claude-sonnet-4-6");
    const later = await shown("later");
    expect(later.spent.usd).toBeCloseTo(OWN, 10);
    // Both kept as counted, side by side in today's total.
    const day = (await p.json(["stats", "budget"])).today;
    expect(day.usd).toBeCloseTo(SONNET_46 + OWN, 10);
  }, 60_000);

  test("a served model with no price reads 'no price known for MODEL' in task show, its JSON, stats and the dashboard", async () => {
    await p.ok(["task", "add", "odd", "--code", "odd"]);
    served = "vendor-mystery-1";
    await ask("odd", "claude-sonnet-4-6");
    served = null;
    const r = await shown("odd");
    expect(r.spent).toMatchObject({ tokens: 47, usd: null, knownUsd: 0, unpriced: ["vendor-mystery-1"] });
    expect(r.spent.models[0]).toMatchObject({ model: "vendor-mystery-1", usd: null, unpriced: ["vendor-mystery-1"] });
    const text = (await p.ok(["task", "show", "odd"])).stdout;
    expect(text).toContain("Cost:    no price known for vendor-mystery-1 (47 tokens in 1 request(s); vendor-mystery-1)");
    expect(text).toContain('[prices."vendor-mystery-1"] in lazy.toml');
    expect(text).not.toMatch(/Cost: +\$0\.0000|Cost: +–/);
    expect((await p.ok(["stats", "budget"])).stdout).toMatch(/odd\s+47\s+no price known for vendor-mystery-1/);

    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/tasks/odd`);
    await pg.waitForFunction(
      () => /no price known for vendor-mystery-1/.test(document.getElementById("cost")?.textContent ?? ""),
      undefined,
      {
        timeout: 10_000,
      },
    );
    await shot(pg, "cost-task-unpriced");
    await pg.goto(`${origin}/usage`);
    await pg.waitForFunction(() => /no price known for vendor-mystery-1/.test(document.body.textContent ?? ""), undefined, {
      timeout: 10_000,
    });
    const usage = (await pg.textContent("body")) ?? "";
    // Today mixes priced and unpriced tasks: the priced part, and the model named.
    expect(usage).toMatch(/\$0\.00\d\d \+ no price known for vendor-mystery-1/);
    await shot(pg, "cost-usage-unpriced");
    await pg.goto(`${origin}/`);
    await pg.waitForFunction(() => /no price known for vendor-mystery-1/.test(document.body.textContent ?? ""), undefined, {
      timeout: 10_000,
    });
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 90_000);

  test("a best-of-N candidate that never ran shows – in lazy compare, never $0.0000; task show says no request yet", async () => {
    const g = await p.json(["task", "add", "--n", "2", "Spend nothing", "--code", "idle"]);
    expect(g.tasks.map((t: any) => t.code)).toEqual(["idle-1", "idle-2"]);
    const out = (await p.ok(["compare", "idle", "--no-check"])).stdout;
    expect(out).not.toContain("$0.0000");
    expect(out).toMatch(/idle-1\s.*\s0\s+–\s/);
    expect((await p.ok(["task", "show", "idle-1"])).stdout).toContain("Cost:    – (no model request yet)");

    // The group's page, the same cell through the same formatter (lines/ costText).
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/groups/idle`);
    await pg.waitForSelector("#compare tbody tr", { timeout: 10_000 });
    const rows = await pg.$$eval("#compare tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );
    expect(rows.map((r) => [r[0], r[5], r[6]])).toEqual([
      ["idle-1", "0", "–"],
      ["idle-2", "0", "–"],
    ]);
    await shot(pg, "cost-group-never-run");
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("a running daemon takes a [prices] edit for the requests after it, and only those", async () => {
    const text = (t: string) => `${base()}\n[budget]\nper_day_tokens = ${t}\n\n[prices."claude-sonnet-4-6"]\ninput = 50\noutput = 50\n`;
    p.writeToml(text("999999999"));
    // The reload is seen once [budget] (written with it) shows.
    await until(
      async () => ((await p.json(["stats", "budget"])).budget.per_day_tokens === 999999999 ? true : undefined),
      15_000,
      "the daemon's reload of lazy.toml",
    );
    await p.ok(["task", "add", "live", "--code", "live"]);
    await ask("live", "claude-sonnet-4-6");
    expect((await shown("live")).spent.usd).toBeCloseTo(at(50, 50, 50, 50), 10);
    expect((await shown("later")).spent.usd).toBeCloseTo(OWN, 10);
    expect((await shown("priced")).spent.usd).toBeCloseTo(SONNET_46, 10);
  }, 60_000);
});
