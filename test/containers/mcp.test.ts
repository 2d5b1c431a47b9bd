/**
 * lazy's MCP tools reach the agents: real Claude Code, Codex and Pi in task containers get the
 * server from the configuration lazy writes, on the listener where they reach the proxy, with
 * the task's own token. The listener serves the MCP route and the proxy, nothing of the API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { codexProject, launched, settled, settledAs, teardown } from "../helpers/fixtures";
import { Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-MCPTOOLS-" + "m".repeat(73) + "AA";
const OPENAI_KEY = "sk-proj-MCPTOOLS-" + "n".repeat(40);
let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;

beforeAll(async () => ({ anthropic, openai, p } = await codexProject(KEY, OPENAI_KEY, { firstCommit: "empty" })), 120_000);
afterAll(() => teardown(p, anthropic, openai));

describe("MCP tools in task containers", () => {
  test("real Claude Code calls lazy's report_progress: the note is in the task's events and in lazy watch", async () => {
    anthropic.answer({
      text: "Reported.",
      toolUse: { name: "mcp__lazy__report_progress", input: { note: "Halfway through the login form." } },
    });
    const watch = Bun.spawn([join(import.meta.dir, "..", "..", "dist", "lazy"), "watch", "--json"], {
      cwd: p.root,
      env: p.fullEnv(),
      stdout: "pipe",
    });
    await launched(p, "reporter", "Report progress");
    const s = await settled(p, "reporter");
    expect(s.task.status).toBe("done");
    expect(s.events.find((e: any) => e.kind === "progress")?.data.text).toBe("Halfway through the login form.");
    // The model saw lazy's tool (loaded up front, not behind ToolSearch).
    const first = anthropic.received.find((r) => r.method === "POST" && r.path.startsWith("/v1/messages"))!;
    expect(first.body).toContain('"name":"mcp__lazy__report_progress"');
    await Bun.sleep(300);
    watch.kill();
    const lines = (await new Response(watch.stdout).text())
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(lines.some((x) => x.type === "event" && x.kind === "progress" && x.data.text === "Halfway through the login form.")).toBe(true);
    expect(
      lines.some((x) => x.type === "net" && x.path === "/mcp" && x.task?.code === "reporter" && x.note === "tools/call report_progress"),
    ).toBe(true);
    expect((await p.ok(["logs", "reporter"])).stdout).toContain(".. Halfway through the login form.");
  }, 600_000);

  test('ask_human leaves the task waiting with the question; lazy send T "blue" runs the next turn with the answer', async () => {
    anthropic.answer({ text: "I asked.", toolUse: { name: "mcp__lazy__ask_human", input: { question: "Which colour?" } } });
    await launched(p, "asker", "Paint it");
    const s = await settled(p, "asker");
    expect(s.task.status).toBe("waiting");
    expect(s.events.filter((e: any) => e.kind === "status").at(-1).data).toMatchObject({ reason: "question", question: "Which colour?" });
    anthropic.answer({ text: "Painted it blue." });
    await p.ok(["send", "asker", "blue"]);
    const next = await settled(p, "asker");
    expect(next.task.status).toBe("done");
    expect(anthropic.received.filter((r) => r.method === "POST").some((r) => r.body.includes("blue"))).toBe(true);
  }, 600_000);

  test("real Codex lists lazy's tools; real Pi calls report_progress through lazy's extension", async () => {
    openai.answer({ text: "Codex here." });
    await launched(p, "codex-tools", "Codex with tools", "--profile", "codex");
    await settledAs(p, "codex-tools");
    const req = openai.received.find((r) => r.path === "/v1/responses")!;
    expect(req.body).toContain('"mcp__lazy"');
    expect(req.body).toContain("report_progress");

    anthropic.answer({ text: "Pi reported.", toolUse: { name: "mcp__lazy__report_progress", input: { note: "Pi was here." } } });
    await launched(p, "pi-tools", "Pi with tools", "--profile", "pi");
    const s = await settled(p, "pi-tools");
    expect(s.task.status).toBe("done");
    expect(s.events.find((e: any) => e.kind === "progress")?.data.text).toBe("Pi was here.");
  }, 600_000);

  test("the listener serves the MCP route and the proxy, and 404 for the daemon's API; after close both the token and the placeholder get 401", async () => {
    const token = readFileSync(join(p.stateDir, "token"), "utf8").trim();
    for (const headers of [{}, { authorization: `Bearer ${token}` }] as Record<string, string>[]) {
      const r = await fetch(`${p.runtimeProxyUrl()}/api/tasks`, { headers });
      expect(r.status).toBe(404);
      expect(await r.text()).toContain("Not a route of lazy's proxy");
    }
    // A task of its own, whose turn minted its MCP token; the turn is held (its agent sleeps) so
    // its container runs: a turn's end stops it, and the token works only during a turn.
    anthropic.answer({ text: "ok.", toolUse: { name: "Bash", input: { command: "sleep 20", description: "hold the turn" } } });
    await launched(p, "closer", "Say ok");
    const id = (await p.json(["task", "show", "closer"])).task.id;
    await until(() => sh("/", `docker ps -q --filter label=dev.lazy.task=${id}`).out.trim() || undefined, 120_000, "the turn's container");
    await anthropic.waitFor(1, 120_000); // the harness is up and talking: its MCP token is minted and pinned
    const tokens = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens;
    const mine = tokens.find((t: any) => t.taskId === id).token;
    const grant = await p.grant({ role: "agent", task: "closer" });
    const call = () =>
      fetch(`${p.runtimeProxyUrl()}/mcp`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${mine}` },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
      });
    // The token is pinned to its container's address, like the placeholder: from this host it is refused…
    const off = await call();
    expect(off.status).toBe(401);
    expect((await off.json()).error.message).toContain(`it belongs to task ${id}'s container`);
    // …and from the task's own container it works.
    const container = sh("/", `docker ps -q --filter label=dev.lazy.task=${id}`).out.trim();
    const url = JSON.parse(sh("/", `docker exec ${container} cat /lazy/harness/mcp.json`).out).mcpServers.lazy.url;
    const list = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
    const fromContainer = sh(
      "/",
      `docker exec -e T=${mine} ${container} node -e 'fetch(${JSON.stringify(url)},{method:"POST",headers:{"content-type":"application/json",accept:"application/json, text/event-stream",authorization:"Bearer "+process.env.T},body:${JSON.stringify(list)}}).then(r=>console.log(r.status))'`,
    );
    expect(fromContainer.out.trim()).toBe("200");
    await settledAs(p, "closer");
    await p.ok(["close", "closer"]);
    expect((await call()).status).toBe(401);
    const r = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": grant.placeholder, "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(401);
    // A caller lazy cannot attribute: counted per minute, source and reason, not a row.
    const counted = (await p.json(["stats", "audit"])).refused.filter((x: any) => x.path === "/mcp");
    expect(counted.at(-1)).toMatchObject({ status: 401, reason: "unknown or revoked MCP token" });
    expect(existsSync(join(p.stateDir, "proxy-tokens.json"))).toBe(true);
  }, 300_000);

  test("Claude Code whose MCP server did not connect: the turn is stopped and fails, saying why, instead of running blind", async () => {
    // The container's own setup wraps claude so it presents a token that is not lazy's: the MCP
    // route answers 401, and Claude Code's init event says "failed".
    const real = "/usr/local/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe";
    const script = `#!/bin/sh\nLAZY_MCP_TOKEN=not-lazys exec ${real} "$@"\n`;
    const wrap = `echo ${Buffer.from(script).toString("base64")} | base64 -d > /tmp/claude && chmod 755 /tmp/claude && sudo mv -f /tmp/claude /usr/local/bin/claude`;
    const q = new Project({
      toml: `[container]\nbase = "${TEST_IMAGES.node}"\nsetup = "${wrap}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`,
    });
    Bun.spawnSync(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
      cwd: q.root,
    });
    await q.setCredential("anthropic", KEY);
    anthropic.reset();
    // The model thinks long: the turn cannot end by itself before lazy stops it.
    anthropic.reply = { text: "Done without tools." };
    anthropic.behavior = { kind: "silent-then-stream", firstByteDelayMs: 20_000, gapMs: 0 };
    try {
      await launched(q, "blind", "Work without tools");
      const s = await until(
        async () => {
          const x = await q.json(["task", "show", "blind"]);
          return x.task.status !== "running" && x.task.status !== "queued" ? x : undefined;
        },
        300_000,
        "the blind turn",
      );
      expect(s.task.status).toBe("failed");
      const why =
        "lazy's MCP server did not connect in claude (status: failed), so the turn was stopped rather than run without lazy's tools";
      const reason = s.events.find((e: any) => e.kind === "refused")?.data.reason;
      expect(reason).toContain(why);
      // lazy says what its side saw: the container's requests came without the task's token.
      expect(reason).toContain("lazy's MCP route got no request with the task's token this turn");
      expect((await q.ok(["logs", "blind"])).stdout).toContain(why);
      // The MCP route saw the wrong token and refused it (counted: a caller lazy cannot attribute).
      const counted = (await q.json(["stats", "audit"])).refused.filter((x: any) => x.path === "/mcp");
      expect(counted.some((x: any) => x.status === 401 && x.reason === "unknown or revoked MCP token")).toBe(true);
    } finally {
      anthropic.behavior = { kind: "ok" };
    }
  }, 600_000);

  // Placeholders and MCP tokens are one registry (proxy/identity/grants.ts): one write to break.
  test("a failure injected into the revocation still revokes both secrets, and the daemon log names it", async () => {
    const { mkdirSync, rmSync, renameSync } = await import("node:fs");
    for (const [code, broken] of [["break-grants", "proxy-tokens.json"]] as const) {
      anthropic.answer({ text: "ok." });
      await launched(p, code, "Say ok");
      await settledAs(p, code);
      const id = (await p.json(["task", "show", code])).task.id;
      const mine = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens.find(
        (t: any) => t.taskId === id,
      ).token;
      const grant = await p.grant({ role: "agent", task: code });
      // The registry's file becomes a folder: writing it fails.
      const file = join(p.stateDir, broken);
      renameSync(file, `${file}.saved`);
      mkdirSync(file);
      try {
        await p.ok(["close", code]);
      } finally {
        rmSync(file, { recursive: true });
        renameSync(`${file}.saved`, file);
      }
      const mcpStatus = (
        await fetch(`${p.runtimeProxyUrl()}/mcp`, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${mine}` },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
        })
      ).status;
      const proxyStatus = (
        await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": grant.placeholder, "content-type": "application/json" },
          body: "{}",
        })
      ).status;
      expect({ code, mcpStatus, proxyStatus }).toEqual({ code, mcpStatus: 401, proxyStatus: 401 });
      expect(p.log()).toContain(`task ${code}: could not revoke the task's placeholders`);
    }
  }, 600_000);
});
