/**
 * Placeholders and MCP tokens are one registry (proxy/identity/grants.ts, one file). A daemon of
 * the release before kept MCP tokens in a file of their own, mcp-tokens.json: an upgraded daemon
 * carries them into the registry, so every session that held a placeholder or an MCP token keeps
 * working, pinned as it was, and is revoked by the one path.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { admit } from "../../src/mcp";
import { Grants } from "../../src/proxy/identity/grants";
import { offPinFrom } from "../../src/proxy/identity/pin";
import * as Placeholders from "../../src/proxy/identity/placeholders";
import { open, Tasks } from "../../src/store";
import * as Log from "../../src/util/log";
import { removeStateDir, stateDir } from "../helpers/fixtures";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

Log.configure({ stderr: false });

const at = "2026-12-01T10:00:00.000Z";
const mcpToken = (n: number) => `lazy-mcp-${String(n).repeat(48)}`;

/** The two files as the release before wrote them: grants without MCP tokens, and mcp-tokens.json. */
function oldFiles(dir: string, grants: unknown[], tokens: unknown[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, "proxy-tokens.json"), JSON.stringify({ version: 1, grants }), { mode: 0o600 });
  writeFileSync(join(dir, "mcp-tokens.json"), JSON.stringify({ version: 1, tokens }), { mode: 0o600 });
}

describe("the registry opened over an older daemon's files", () => {
  let dir: string;
  beforeEach(() => {
    dir = stateDir("lazy-registry-upgrade-");
  });
  afterEach(() => removeStateDir(dir));

  test("every placeholder and MCP token still answers, pinned as it was; the old file goes; one revoke takes both", () => {
    const placeholder = Placeholders.mint("anthropic-api-key");
    const grant = {
      token: placeholder,
      role: "agent",
      taskId: "t-running",
      taskRef: "running",
      session: null,
      profile: "claude",
      envVar: "ANTHROPIC_API_KEY",
      shape: "anthropic-api-key",
      createdAt: at,
      pinnedIp: "172.18.0.5",
    };
    oldFiles(
      dir,
      [grant],
      [
        // Its container runs at 172.18.0.5; its container stopped (null: from no address); never pinned; a builder session.
        { token: mcpToken(1), kind: "task", taskId: "t-running", session: null, pinnedIp: "172.18.0.5", createdAt: at },
        { token: mcpToken(2), kind: "task", taskId: "t-stopped", session: null, pinnedIp: null, createdAt: at },
        { token: mcpToken(3), kind: "task", taskId: "t-unpinned", session: null, createdAt: at },
        { token: mcpToken(4), kind: "builder", taskId: null, session: "plan", pid: 4242, createdAt: at },
      ],
    );
    const db = open(join(dir, "store.db"));
    const g = Grants.open(dir);

    expect(g.lookup(placeholder)).toMatchObject({ role: "agent", taskId: "t-running", pinnedIp: "172.18.0.5" });
    expect(offPinFrom(g.lookup(placeholder)!, "172.18.0.5")).toBe(false);
    expect(offPinFrom(g.lookup(placeholder)!, "172.18.0.9")).toBe(true);
    const deps = { db, tokens: g.mcp, live: () => true };
    expect(admit(deps, mcpToken(1), "172.18.0.5")).toMatchObject({ ok: true, who: { taskId: "t-running", role: "agent" } });
    expect(admit(deps, mcpToken(1), "172.18.0.9")).toMatchObject({
      ok: false,
      note: "MCP token presented from 172.18.0.9, pinned to 172.18.0.5",
    });
    expect(admit(deps, mcpToken(2), "172.18.0.5")).toMatchObject({
      ok: false,
      note: "MCP token presented from 172.18.0.5, pinned to none",
    });
    expect(admit(deps, mcpToken(3), "10.0.0.1")).toMatchObject({ ok: true });
    expect(admit(deps, mcpToken(4), "127.0.0.1")).toMatchObject({ ok: true, who: { role: "builder" } });
    expect(g.mcp.builders()).toEqual([{ session: "plan", pid: 4242 }]);
    expect(g.mcp.forTask("t-running").token).toBe(mcpToken(1)); // the next turn gets the same token

    // One file from now on, 0600, and it is what the next daemon reads.
    expect(existsSync(join(dir, "mcp-tokens.json"))).toBe(false);
    const file = JSON.parse(readFileSync(join(dir, "proxy-tokens.json"), "utf8"));
    expect(file.mcpTokens.map((t: { token: string }) => t.token)).toEqual([1, 2, 3, 4].map(mcpToken));
    const again = Grants.open(dir);
    expect(admit({ db, tokens: again.mcp, live: () => true }, mcpToken(1), "172.18.0.5")).toMatchObject({ ok: true });

    // The task's session ends: its placeholder and its MCP token go in one revocation.
    expect(again.revokeTask("t-running")).toBe(2);
    expect(again.lookup(placeholder)).toBeUndefined();
    expect(admit({ db, tokens: again.mcp, live: () => true }, mcpToken(1), "172.18.0.5")).toMatchObject({ ok: false });
    expect(again.revokeBuilder("plan")).toBe(1);
    expect(again.mcp.builders()).toEqual([]);
    db.close();
  });

  test("pinning a task's placeholder pins its MCP token by the same rule; its container stopping unpins both", () => {
    const g = Grants.open(dir);
    const db = open(join(dir, "store.db"));
    const task = Tasks.add(db, { prompt: "p", code: "pinned", profile: "claude" });
    const placeholder = g.mint({
      role: "agent",
      taskId: task.id,
      taskRef: "pinned",
      profile: "claude",
      envVar: "ANTHROPIC_API_KEY",
      shape: "anthropic-api-key",
    }).token;
    g.pin(placeholder, "172.18.0.7"); // before the launch asked for the MCP token: it is minted pinned
    const token = g.mcp.forTask(task.id).token;
    const deps = { db, tokens: g.mcp, live: () => true };
    expect(admit(deps, token, "172.18.0.7")).toMatchObject({ ok: true });
    expect(admit(deps, token, "172.18.0.8")).toMatchObject({ ok: false });
    expect(g.unpinTask(task.id)).toBe(true);
    expect(offPinFrom(g.lookup(placeholder)!, "172.18.0.7")).toBe(true);
    expect(admit(deps, token, "172.18.0.7")).toMatchObject({ ok: false, note: "MCP token presented from 172.18.0.7, pinned to none" });
    db.close();
  });

  test("an older daemon run in between (it minted and revoked in mcp-tokens.json): its word wins, nothing it revoked comes back", () => {
    const tok = (n: number, taskId: string) => ({ token: mcpToken(n), kind: "task", taskId, session: null, createdAt: at });
    // This release wrote token 5 into the registry; the older daemon, run after it, revoked 5 and minted 6.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(join(dir, "proxy-tokens.json"), JSON.stringify({ version: 1, grants: [], mcpTokens: [tok(5, "t-ended")] }), {
      mode: 0o600,
    });
    writeFileSync(join(dir, "mcp-tokens.json"), JSON.stringify({ version: 1, tokens: [tok(6, "t-new")] }), { mode: 0o600 });
    const db = open(join(dir, "store.db"));
    const deps = { db, tokens: Grants.open(dir).mcp, live: () => true };
    expect(admit(deps, mcpToken(5), "10.0.0.1")).toMatchObject({ ok: false });
    expect(admit(deps, mcpToken(6), "10.0.0.1")).toMatchObject({ ok: true, who: { taskId: "t-new" } });
    db.close();
  });

  test("a broken mcp-tokens.json strands nothing: the placeholders load, the file goes, its tokens are minted anew", () => {
    const placeholder = Placeholders.mint("anthropic-api-key");
    oldFiles(dir, [], []);
    writeFileSync(
      join(dir, "proxy-tokens.json"),
      JSON.stringify({
        version: 1,
        grants: [
          {
            token: placeholder,
            role: "host",
            taskId: null,
            taskRef: null,
            session: null,
            profile: "claude",
            envVar: "ANTHROPIC_API_KEY",
            shape: "anthropic-api-key",
            createdAt: at,
            pinnedIp: null,
          },
        ],
      }),
    );
    writeFileSync(join(dir, "mcp-tokens.json"), "{not json");
    const g = Grants.open(dir);
    expect(g.lookup(placeholder)?.role).toBe("host");
    expect(existsSync(join(dir, "mcp-tokens.json"))).toBe(false);
    expect(g.mcp.builders()).toEqual([]);
  });
});

describe("an upgraded daemon", () => {
  const KEY = `sk-ant-api03-UPGRADE-${"u".repeat(74)}AA`;
  let anthropic: Mock.MockProvider;
  beforeAll(async () => {
    anthropic = await Mock.anthropic();
  });
  afterAll(() => cleanupAll(anthropic));

  test("a builder session begun before the upgrade keeps its placeholder and MCP token; its end revokes both", async () => {
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    await p.setCredential("anthropic", KEY);
    await p.ok(["daemon", "stop"]);
    const placeholder = Placeholders.mint("anthropic-api-key");
    const token = mcpToken(7);
    oldFiles(
      p.stateDir,
      [
        {
          token: placeholder,
          role: "builder",
          taskId: null,
          taskRef: null,
          session: "before",
          profile: "claude",
          envVar: "ANTHROPIC_API_KEY",
          shape: "anthropic-api-key",
          createdAt: at,
          pinnedIp: null,
        },
      ],
      // Its lazy build still runs (this test's process): the daemon's sweep leaves it.
      [{ token, kind: "builder", taskId: null, session: "before", pid: process.pid, createdAt: at }],
    );
    await p.ok(["daemon", "start"]);
    const proxy = p.runtimeProxyUrl();
    const model = () =>
      fetch(`${proxy}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": placeholder },
        body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
      });
    const tools = () =>
      fetch(`${proxy}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${token}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
    anthropic.reset();
    const m = await model();
    expect(m.status).toBe(200);
    await m.arrayBuffer();
    expect(anthropic.received.at(-1)?.headers["x-api-key"]).toBe(KEY);
    const t = await tools();
    expect(t.status).toBe(200);
    expect(JSON.stringify(await t.json())).toContain("task_create");
    expect(existsSync(join(p.stateDir, "mcp-tokens.json"))).toBe(false);

    await p.api("POST", "/api/build/end", { session: "before" });
    expect((await model()).status).toBe(401);
    expect((await tools()).status).toBe(401);
  }, 60_000);
});
