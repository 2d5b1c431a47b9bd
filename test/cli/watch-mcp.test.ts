/**
 * lazy watch without a line per MCP poll (issue 30, Deliver 7): an agent polling one of lazy's
 * MCP tools (a builder session's task_list, five times) prints no net> line per call in the text
 * feed, while model traffic still does and a refused MCP request still does (with its cause);
 * `lazy watch --json` keeps every request. Real daemon, real proxy, a mock provider on loopback.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { anthropicHost, watching } from "../helpers/fixtures";
import { cleanupAll, never, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-WATCHMCP-" + "m".repeat(70) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicHost(KEY));
  await p.ok(["task", "add", "poll target", "--code", "polled"]);
});

afterAll(() => cleanupAll(anthropic));

/** A running `lazy watch ARGS`, its stdout lines collected as they come. */
const watcher = (args: string[]) => watching(p, args);

async function mcp(url: string, token: string | null, id: number): Promise<number> {
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "task_list", arguments: {} } }),
  });
  await res.arrayBuffer();
  return res.status;
}

test("five answered MCP polls print no net> line; the model call and a refused MCP request do; --json has all seven", async () => {
  const text = watcher([]);
  const json = watcher(["--json"]);
  try {
    await until(() => text.lines.length > 0 || json.lines.length > 0 || undefined, 10_000, "the watch to open");
    await Bun.sleep(300);
    const session = await p.api<{ mcp: { url: string; token: string }; placeholder: string; proxyUrl: string }>(
      "POST",
      "/api/build/session",
      { name: "poller", pid: process.pid },
    );
    for (let i = 1; i <= 5; i++) expect(await mcp(session.mcp.url, session.mcp.token, i)).toBe(200);
    expect(await mcp(session.mcp.url, null, 6)).toBe(401);
    // A model call through the proxy: the line that matters.
    const res = await fetch(`${session.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": session.placeholder },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);

    const items = await until(
      () => {
        const nets = json.lines.map((l) => JSON.parse(l)).filter((x) => x.type === "net");
        return nets.length >= 7 ? nets : undefined;
      },
      10_000,
      "seven net items in --json",
    );
    expect(items.filter((x) => x.path === "/mcp").map((x) => x.status)).toEqual([200, 200, 200, 200, 200, 401]);
    await until(() => text.lines.some((l) => l.includes("/v1/messages")) || undefined, 5_000, "the model call's net> line");
    // Anything the text feed would still print about the polls has arrived by now.
    await never(() => text.lines.some((l) => l.includes("net> ") && l.includes("/mcp 200")), 500, "a net> line for an answered poll");
    const nets = text.lines.filter((l) => l.includes("net> "));
    expect(nets.filter((l) => l.includes("/mcp"))).toEqual([expect.stringMatching(/net> - - POST \/mcp 401 \d+ms {2}\(no MCP token\)$/)]);
    expect(nets.filter((l) => l.includes("/v1/messages"))).toEqual([
      expect.stringMatching(/net> builder claude POST \/v1\/messages 200 \d+ms/),
    ]);
  } finally {
    text.stop();
    json.stop();
    await p.api("POST", "/api/build/end", { session: "poller" }).catch(() => {});
  }
});
