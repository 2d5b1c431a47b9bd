/**
 * lazy build: a builder session on the host (real Claude Code) plans work with lazy's builder
 * tools; its grant and MCP token end with the session.
 * tier: docker (task_create adds a task: lazy's preflight asks the engine)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-BUILDER-" + "u".repeat(74) + "AA";
const TOOLS = `${process.env.LAZY_TEST_TOOLS ?? "/opt/lazy-test-tools"}/node_modules/.bin`;
let anthropic: Mock.MockProvider;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
});
afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
});

describe("lazy build", () => {
  test("the builder's agent creates a task with task_create; after the session its grant and token are gone", async () => {
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    await p.setCredential("anthropic", KEY);
    anthropic.reset();
    anthropic.reply = {
      text: "Planned.",
      toolUse: { name: "mcp__lazy__task_create", input: { prompt: "Write the docs for the login form", code: "docs" } },
    };
    const r = await p.run(["build", "--name", "plan-1", "--", "-p", "plan the work", "--output-format", "json"], {
      env: { PATH: `${TOOLS}:${process.env.PATH}` },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).result).toContain("Planned.");
    const tasks = await p.json<any[]>(["task", "list"]);
    expect(tasks.map((t) => [t.code, t.status, t.title])).toEqual([["docs", "queued", "Write the docs for the login form"]]);
    // The model saw the builder tools, and none of a task's.
    const first = anthropic.received.find((x) => x.method === "POST")!.body;
    expect(first).toContain('"name":"mcp__lazy__task_create"');
    expect(first).not.toContain('"name":"mcp__lazy__report_progress"');
    // The session ended: its grant and its MCP token are gone from their registries.
    const grants = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).grants;
    expect(grants.filter((g: any) => g.role === "builder")).toEqual([]);
    const tokens = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens;
    expect(tokens.filter((t: any) => t.kind === "builder")).toEqual([]);
    const rows = (await p.json(["stats", "audit"])).rows;
    expect(rows.some((x: any) => x.role === "builder" && x.path === "/mcp" && x.note === "tools/call task_create")).toBe(true);
    expect(rows.some((x: any) => x.role === "builder" && x.path.startsWith("/v1/messages"))).toBe(true);
  }, 120_000);

  test("after the session ends, its placeholder and its MCP token both get 401", async () => {
    const { mkdtempSync, writeFileSync, chmodSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    await p.setCredential("anthropic", KEY);
    // A stand-in harness that keeps what the session was given, then ends.
    const bin = mkdtempSync(join(tmpdir(), "lazy-fake-claude-"));
    const kept = join(bin, "kept.json");
    writeFileSync(join(bin, "claude"), `#!/bin/sh\nprintf '{"key":"%s","mcp":"%s"}' "$ANTHROPIC_API_KEY" "$LAZY_MCP_TOKEN" > ${kept}\n`);
    chmodSync(join(bin, "claude"), 0o755);
    await p.ok(["build", "--name", "short-lived"], { env: { PATH: `${bin}:${process.env.PATH}` } });
    const { key, mcp } = JSON.parse(readFileSync(kept, "utf8"));
    expect(key).toStartWith("sk-ant-api03-");
    expect(mcp).toStartWith("lazy-mcp-");
    const proxy = p.runtimeProxyUrl();
    const model = await fetch(`${proxy}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: "{}",
    });
    expect(model.status).toBe(401);
    const tools = await fetch(`${proxy}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${mcp}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(tools.status).toBe(401);
  }, 60_000);

  test("a lazy build killed outright (SIGKILL) still ends its session: its grant and MCP token are revoked", async () => {
    const { mkdtempSync, writeFileSync, chmodSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
    await p.setCredential("anthropic", KEY);
    // A stand-in harness that keeps what it was given and stays, as a person's session would.
    const bin = mkdtempSync(join(tmpdir(), "lazy-fake-claude-"));
    const kept = join(bin, "kept.json");
    writeFileSync(
      join(bin, "claude"),
      `#!/bin/sh\nprintf '{"key":"%s","mcp":"%s"}' "$ANTHROPIC_API_KEY" "$LAZY_MCP_TOKEN" > ${kept}\nexec sleep 60\n`,
    );
    chmodSync(join(bin, "claude"), 0o755);
    await p.ok(["daemon", "start"]);
    const build = Bun.spawn([BIN, "build", "--name", "killed"], {
      cwd: p.root,
      env: p.fullEnv({ PATH: `${bin}:${process.env.PATH}` }),
      stdout: "ignore",
      stderr: "ignore",
    });
    // The shell makes the file before printf fills it: wait for what it wrote, whole.
    const { key, mcp } = await until(
      () => {
        try {
          return JSON.parse(readFileSync(kept, "utf8")) as { key: string; mcp: string };
        } catch {
          return undefined;
        }
      },
      30_000,
      "the builder session's harness",
    );
    const status = async () => {
      const proxy = p.runtimeProxyUrl();
      const model = await fetch(`${proxy}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: "{}",
      });
      const tools = await fetch(`${proxy}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${mcp}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
      return { model: model.status, tools: tools.status };
    };
    // While the session runs, its MCP token works.
    expect((await status()).tools).toBe(200);
    build.kill("SIGKILL");
    Bun.spawnSync(["pkill", "-f", `${bin}/claude`]);
    await build.exited;
    const after = await until(
      async () => {
        const s = await status();
        return s.model === 401 && s.tools === 401 ? s : undefined;
      },
      45_000,
      "the killed session's grant and token to be revoked",
    );
    expect(after).toEqual({ model: 401, tools: 401 });
    expect(p.log()).toContain("builder session killed ended without saying so (its lazy build, pid");
  }, 120_000);
});
