/**
 * lazy's MCP tools for a task's agent, through the official SDK's client over real HTTP on
 * loopback: the token decides the task, the tools' effects are lazy's own records.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { loadText } from "../../src/config";
import { admit, lastHeard, MCP_PATH, MEMORY_PER_TURN, PROGRESS_PER_MINUTE, serve } from "../../src/mcp";
import { GRANTS_FILE } from "../../src/proxy";
import { Grants } from "../../src/proxy/identity/grants";
import { Memory, open, Runs, Tasks } from "../../src/store";
import { never } from "../helpers/lazy";

const dir = mkdtempSync(join(tmpdir(), "lazy-mcp-"));
const db = open(join(dir, "store.db"));
// MCP tokens are the grant registry's: minted and looked up through its MCP view, revoked and
// pinned with the task's placeholders.
const registry = Grants.open(dir);
const tokens = registry.mcp;
/** The task's agent placeholder, which its MCP token is pinned with. */
const placeholderOf = (taskId: string) =>
  registry.mint({ role: "agent", taskId, taskRef: null, profile: "claude", envVar: "ANTHROPIC_API_KEY", shape: "anthropic-api-key" }).token;
const loaded = loadText("[budget]\nper_task_tokens = 5000\n");
if (!loaded.ok) throw new Error("config");
const config = loaded.config;
let server: ReturnType<typeof Bun.serve>;
/** The method of every request the server was sent, in order. */
const methods: string[] = [];
const events: { taskId: string; kind: string; data: Record<string, unknown> }[] = [];

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (req) =>
      methods.push(req.method) && new URL(req.url).pathname === MCP_PATH
        ? serve(
            {
              db,
              tokens,
              live: () => true, // every task here has a running turn
              config: () => config,
              event: (t, kind, data) => {
                Tasks.addEvent(db, t.id, kind, data);
                events.push({ taskId: t.id, kind, data });
              },
              branchOf: (t) => `lazy/${t.code ?? t.id}`,
              add: async (input) => Tasks.add(db, { ...input, profile: input.profile ?? "claude" }),
              start: async (ref) => Tasks.resolve(db, ref),
            },
            req,
            "127.0.0.1",
          ).then((r) => r.response)
        : new Response("not found", { status: 404 }),
  });
});
afterAll(() => server?.stop(true));

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: "test", version: "1" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}${MCP_PATH}`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return client;
}
const textOf = (r: any) => r.content[0].text as string;

describe("MCP tools for a task's agent", () => {
  test("the token decides the task; the tools record progress, a question, a summary and memory", async () => {
    const a = Tasks.add(db, { prompt: "Fix the login form", code: "fix-login", profile: "claude" });
    const b = Tasks.add(db, { prompt: "Other work", code: "other", profile: "claude" });
    const client = await connect(tokens.forTask(a.id).token);
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(["ask_human", "finish", "memory_read", "memory_write", "report_progress", "task_info"]);

    const info = JSON.parse(textOf(await client.callTool({ name: "task_info", arguments: {} })));
    expect(info.task).toMatchObject({ id: a.id, code: "fix-login", prompt: "Fix the login form" });
    expect(info.branch).toBe("lazy/fix-login");
    expect(info.budget.tokens).toEqual({ limit: 5000, spent: 0, left: 5000 });

    // The tools that write need a running turn: a queued task's agent records nothing.
    for (const [name, args] of [
      ["report_progress", { note: "Early." }],
      ["ask_human", { question: "Keep the old regex?" }],
      ["finish", { summary: "Nothing yet." }],
      ["memory_write", { note: "Not yet." }],
    ] as const) {
      const refused = (await client.callTool({ name, arguments: args })) as any;
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain("Task fix-login is queued, not running");
    }
    expect(Tasks.events(db, a.id).map((e) => e.kind)).toEqual(["created"]);
    expect(Runs.get(db, a.id).summary ?? null).toBeNull();
    Tasks.move(db, a.id, "running");

    await client.callTool({ name: "report_progress", arguments: { note: "Found the validator." } });
    expect(Tasks.events(db, a.id).at(-1)).toMatchObject({ kind: "progress", data: { text: "Found the validator." } });
    expect(Tasks.events(db, b.id).some((e) => e.kind === "progress")).toBe(false);
    await client.callTool({ name: "ask_human", arguments: { question: "Keep the old regex?" } });
    expect(Runs.get(db, a.id).question).toBe("Keep the old regex?");
    const bad = (await client.callTool({ name: "report_progress", arguments: { note: 42 } })) as any;
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain("note");
    await client.callTool({ name: "finish", arguments: { summary: "Validator fixed; tests added." } });
    expect(Runs.get(db, a.id).summary).toBe("Validator fixed; tests added.");

    await client.callTool({ name: "memory_write", arguments: { note: "Emails are validated in src/auth/email.ts." } });
    const notes = Memory.list(db);
    expect(notes.at(-1)).toMatchObject({ text: "Emails are validated in src/auth/email.ts.", taskId: a.id, by: "agent" });
    expect(textOf(await client.callTool({ name: "memory_read", arguments: {} }))).toContain("Emails are validated in src/auth/email.ts.");
    await client.close();
  });

  test("a GET is 405 (no SSE stream), after the token is checked: the SDK's client asks once a session, not every second", async () => {
    const t = Tasks.add(db, { prompt: "Watch the stream", code: "no-stream", profile: "claude" });
    const token = tokens.forTask(t.id).token;
    const url = `http://127.0.0.1:${server.port}${MCP_PATH}`;
    const get = (bearer: string) =>
      fetch(url, { headers: { accept: "text/event-stream", ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) } });
    const anon = await get("");
    expect(anon.status).toBe(401);
    const res = await get(token);
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("POST, DELETE");
    expect((await res.json()).error.message).toContain("no SSE stream");
    // What the route last did with the task's token, for a blind turn's refusal (turn-watch.ts).
    expect(lastHeard(t.id)).toMatchObject({ status: 405 });
    // The real client: one GET after initialize; a stream that closed at once was opened again
    // about every second (reconnection), for as long as the session lasted.
    const from = methods.length;
    const client = await connect(token);
    await never(() => methods.slice(from).filter((m) => m === "GET").length > 1, 2500, "a second GET (the stream opened again)");
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    expect(methods.slice(from).filter((m) => m === "GET")).toEqual(["GET"]);
    expect(lastHeard(t.id)?.status).toBeLessThan(300);
  });

  test("an unknown or revoked token gets 401 and reaches no tool; the registry is 0600", async () => {
    const t = Tasks.add(db, { prompt: "short", code: "revoked", profile: "claude" });
    const token = tokens.forTask(t.id).token;
    expect(tokens.forTask(t.id).token).toBe(token); // the same token across turns
    expect(statSync(join(dir, GRANTS_FILE)).mode & 0o777).toBe(0o600);
    registry.revokeTask(t.id);
    const before = events.length;
    for (const bearer of [token, "lazy-mcp-" + "0".repeat(48), ""]) {
      const res = await fetch(`http://127.0.0.1:${server.port}${MCP_PATH}`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "report_progress", arguments: { note: "x" } },
        }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBeNull();
    }
    expect(events.length).toBe(before);
  });

  test("a done task's finish is refused and its summary kept; progress and memory writes are bounded, drops counted once", async () => {
    const t = Tasks.add(db, { prompt: "Bounded", code: "bounded", profile: "claude" });
    Tasks.move(db, t.id, "running");
    const client = await connect(tokens.forTask(t.id).token);
    await client.callTool({ name: "finish", arguments: { summary: "The real summary." } });
    Tasks.move(db, t.id, "done");
    const late = (await client.callTool({ name: "finish", arguments: { summary: "Rewritten behind your back." } })) as any;
    expect(late.isError).toBe(true);
    expect(textOf(late)).toContain("Task bounded is done, not running");
    expect(Runs.get(db, t.id).summary).toBe("The real summary.");

    Tasks.move(db, t.id, "running");
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => client.callTool({ name: "report_progress", arguments: { note: `note ${i}` } }) as any),
    );
    const kept = Tasks.events(db, t.id).filter((e) => e.kind === "progress");
    expect(kept.length).toBe(PROGRESS_PER_MINUTE);
    expect(answers.filter((a) => a.isError).length).toBe(200 - PROGRESS_PER_MINUTE);
    expect(textOf(answers.find((a) => a.isError))).toContain(`at most ${PROGRESS_PER_MINUTE} progress notes a minute`);

    const before = Memory.list(db).length;
    const writes = [];
    for (let i = 0; i < MEMORY_PER_TURN + 3; i++)
      writes.push((await client.callTool({ name: "memory_write", arguments: { note: `fact ${i}` } })) as any);
    expect(Memory.list(db).length - before).toBe(MEMORY_PER_TURN);
    expect(textOf(writes.at(-1))).toContain(`at most ${MEMORY_PER_TURN} notes`);
    await client.close();
  });

  test("a pinned token is admitted from its container's address only, before any body is read", () => {
    const t = Tasks.add(db, { prompt: "Pinned", code: "pinned", profile: "claude" });
    const token = tokens.forTask(t.id).token;
    registry.pin(placeholderOf(t.id), "172.30.0.5");
    expect(admit({ db, tokens, live: () => true }, token, "172.30.0.5")).toMatchObject({
      ok: true,
      who: { taskId: t.id, taskRef: "pinned", role: "agent" },
    });
    const off = admit({ db, tokens, live: () => true }, token, "172.30.0.9");
    expect(off).toMatchObject({ ok: false, note: "MCP token presented from 172.30.0.9, pinned to 172.30.0.5" });
    expect((off as { message: string }).message).toContain("belongs to task");
    // What the route last heard from the task's token, for a blind turn's refusal (turn-watch.ts).
    expect(lastHeard(t.id)?.refused).toBe((off as { message: string }).message);
    expect(admit({ db, tokens, live: () => true }, "", "172.30.0.5")).toMatchObject({ ok: false, note: "no MCP token" });
    const before = Date.now();
    admit({ db, tokens, live: () => true }, token, "172.30.0.5");
    expect(lastHeard(t.id)).toEqual({ at: expect.any(Number) });
    // Heard at this admit, not an earlier one.
    expect(lastHeard(t.id)!.at).toBeGreaterThanOrEqual(before);
    expect(lastHeard(t.id)!.at).toBeLessThanOrEqual(Date.now());
    expect(lastHeard("never-heard")).toBeUndefined();
  });

  test("a builder session's token is admitted from this machine only (loopback), like its placeholder", () => {
    const token = tokens.forBuilder("planner").token;
    for (const from of ["127.0.0.1", "::1"]) expect(admit({ db, tokens, live: () => false }, token, from)).toMatchObject({ ok: true });
    const off = admit({ db, tokens, live: () => true }, token, "172.30.0.5");
    expect(off).toMatchObject({ ok: false, note: "MCP token presented from 172.30.0.5, pinned to this machine" });
    expect((off as { message: string }).message).toBe(
      "lazy's MCP route refused this token: it belongs to builder session planner on this machine, usable from this machine only, and was presented from 172.30.0.5.",
    );
  });

  test("a task's token is refused while the task has no running turn, naming why", () => {
    const t = Tasks.add(db, { prompt: "Between turns", code: "between", profile: "claude" });
    const token = tokens.forTask(t.id).token;
    const idle = admit({ db, tokens, live: () => false }, token, "172.30.0.5");
    expect(idle).toMatchObject({ ok: false, note: "no running turn" });
    expect((idle as { message: string }).message).toContain("lazy refused this MCP token: task between has no running turn");
    expect(admit({ db, tokens, live: (id) => id === t.id }, token, "172.30.0.5")).toMatchObject({ ok: true });
  });
});
