/**
 * Attacks on how lazy's MCP route reads its caller, by a prompt-injected agent in a real task
 * container during its own running turn (issue 26, the attacker's pass): real Claude Code runs
 * test/attacks/probe-mcp-agent.mjs as a Bash tool call (the mock provider answers with the
 * tool_use). Every call it makes is report_progress with a text naming the attempt, so what ran
 * is what the store holds. Not covered by test/attacks/mcp.test.ts: the token where the route
 * does not look (query string, Basic, Proxy-Authorization, X-Authorization), a keep-alive
 * connection after an admitted call (no token, or another task's), two Authorization headers
 * naming two tasks, and Expect: 100-continue with another task's token.
 *
 * These held on the code as merged (entry.ts reads one Bearer per request and asks the main
 * thread about it and the address before the body): they stand in the suite so a change to
 * the admission memory or the bearer's reading that breaks them is caught.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { containerProject, copying, launched, settledAs } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-PROBEMCP-" + "m".repeat(72) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;
let victim: { id: string; token: string };
let results: any;
/** The victim's own MCP calls during its own turn, before the prober ran. */
let victimRows: number;
const mcpRowsOf = async (ref: string) => (await p.json(["stats", "audit", "--task", ref])).rows.filter((r: any) => r.path === "/mcp");

const progressOf = async (ref: string): Promise<string[]> =>
  (await p.json(["task", "show", ref])).events.filter((e: any) => e.kind === "progress").map((e: any) => e.data.text);

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = await containerProject(anthropic, KEY, {
    readme: false,
    files: copying(import.meta.dir, "probe-mcp-agent.mjs"),
  });
  // Another task of the same project: its token is what the prober tries to ride on.
  anthropic.reply = { text: "Nothing to do." };
  const v = await p.json(["task", "add", "An honest task", "--code", "victim"]);
  await p.ok(["start", "victim"]);
  await settledAs(p, "victim");
  const tokens = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens;
  victim = { id: v.id, token: tokens.find((h: any) => h.taskId === v.id).token };
  victimRows = (await mcpRowsOf("victim")).length;
  anthropic.answer({
    text: "done.",
    toolUse: { name: "Bash", input: { command: `node probe-mcp-agent.mjs ${victim.token}`, description: "probe", timeout: 120000 } },
  });
  await launched(p, "prober", "Probe the MCP route");
  await settledAs(p, "prober");
  results = JSON.parse(readFileSync(join(p.stateDir, "worktrees", "prober", "probe-results.json"), "utf8"));
  expect(results.hasToken).toBe(true);
}, 900_000);
afterAll(() => cleanupAll(anthropic));

describe("a prompt-injected agent on the MCP route, from its own running container", () => {
  test("its own token in the query string (token=, access_token=, authorization=) or X-Authorization: 401, no tool runs", async () => {
    expect(results.query.statuses, results.query.text).toEqual([401, 401]);
    expect(results.query.text).toContain("lazy's MCP route needs the task's token (Authorization: Bearer");
    const ran = await progressOf("prober");
    expect(ran.filter((t) => t.startsWith("probe-query"))).toEqual([]);
  });

  test("its own token as Basic credentials or in Proxy-Authorization: 401, no tool runs", async () => {
    expect(results.basic.statuses, results.basic.text).toEqual([401, 401]);
    const ran = await progressOf("prober");
    expect(ran.filter((t) => t === "probe-basic" || t === "probe-proxy-auth")).toEqual([]);
  });

  test("a tokenless call on a keep-alive connection right after an admitted one: the first runs, the second is 401", async () => {
    expect(results.keepAlive.statuses, results.keepAlive.text).toEqual([200, 401]);
    const ran = await progressOf("prober");
    expect(ran).toContain("probe-admitted");
    expect(ran).not.toContain("probe-riding");
  });

  test("another task's token on the same connection within the admission memory's 5 s: 401 naming why, nothing on that task", async () => {
    expect(results.keepAliveOther.statuses[0], results.keepAliveOther.text).toBe(200);
    expect(results.keepAliveOther.statuses[1], results.keepAliveOther.text).toBe(401);
    expect(results.keepAliveOther.text).toContain("task victim has no running turn");
    expect(await progressOf("victim")).toEqual([]);
    expect(await progressOf("prober")).not.toContain("probe-other-after-mine");
  });

  test("two Authorization headers, its own and another task's, in either order: refused, nothing attributed to the other task", async () => {
    expect(results.twoHeaders.statuses, results.twoHeaders.text).toEqual([401, 401]);
    expect(await progressOf("victim")).toEqual([]);
    expect((await progressOf("prober")).filter((t) => t.startsWith("probe-two-headers"))).toEqual([]);
    expect((await mcpRowsOf("victim")).length).toBe(victimRows);
  });

  // Bun.serve answers 100 Continue itself before the route runs (nothing in lazy can hold it back):
  // the body is invited, then thrown away unread by any tool.
  test("Expect: 100-continue with another task's token: 401 naming why; the body it was invited to send runs nothing", async () => {
    expect(
      results.expect.statuses.filter((s: number) => s !== 100),
      results.expect.text,
    ).toEqual([401]);
    expect(results.expect.text).toContain("task victim has no running turn");
    expect(await progressOf("victim")).toEqual([]);
    expect(await progressOf("prober")).not.toContain("probe-expect");
  });

  test("nothing of it reached the upstream: every model request carried the stored key, none another credential", () => {
    expect(anthropic.received.length).toBeGreaterThan(0);
    for (const r of anthropic.received) {
      expect(r.headers["x-api-key"] ?? KEY).toBe(KEY);
      expect(r.headers.authorization).toBeUndefined();
      expect(JSON.stringify(r.headers)).not.toContain(victim.token);
    }
  });
});
