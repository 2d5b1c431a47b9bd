/**
 * Every way a prompt reaches lazy refuses an empty one and one over the bound before a task is
 * made (issue 30, Deliver 5 and Bad input): the CLI and POST /api/tasks are in prompts.test.ts;
 * here a builder session's MCP tools (task_create, task_send), as an agent in `lazy build` calls
 * them, and the API's send and ask routes (the dashboard's message box uses send).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

const KEY = "sk-ant-api03-PROMPTPATHS-" + "q".repeat(66) + "AA";
let p: Project;
let mcp: { url: string; token: string };

beforeAll(async () => {
  p = new Project();
  await p.setCredential("anthropic", KEY);
  await p.ok(["task", "add", "an honest task", "--code", "honest"]);
  mcp = (await p.api<{ mcp: { url: string; token: string } }>("POST", "/api/build/session", { name: "planner", pid: process.pid })).mcp;
});

afterAll(async () => {
  await p.api("POST", "/api/build/end", { session: "planner" }).catch(() => {});
  await cleanupAll();
});

let id = 0;
async function call(name: string, args: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(mcp.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${mcp.token}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name, arguments: args } }),
  });
  return { status: res.status, text: await res.text() };
}

const tasks = async () => ((await p.json(["task", "list"])) as { code: string | null }[]).map((t) => t.code);

test("task_create refuses an empty or blank prompt with the reason, and makes nothing", async () => {
  for (const prompt of ["", "   \n\t"]) {
    const r = await call("task_create", { prompt, code: "blank" });
    expect(r.text).toContain('"isError":true');
    expect(r.text).toContain("The prompt is empty: say what the agent should do.");
  }
  expect(await tasks()).toEqual(["honest"]);
});

test("task_create refuses a prompt over the bound (100 KB, and 1 MB); nothing is made", async () => {
  const r = await call("task_create", { prompt: "x".repeat(100_000), code: "big" });
  expect(r.text).toContain('"isError":true');
  expect(r.text).toContain("A builder's task prompt is at most 20000 characters: put the long part in a file in the project");
  // 1 MB: refused by the MCP route's body bound before any tool sees it.
  const huge = await call("task_create", { prompt: "x".repeat(1024 * 1024), code: "huge" });
  expect(huge.status).toBe(413);
  expect(huge.text).toContain("An MCP request body is at most 1048576 bytes.");
  expect(await tasks()).toEqual(["honest"]);
});

test("task_send refuses a blank message; a real prompt still makes a task", async () => {
  const blank = await call("task_send", { task: "honest", message: "  " });
  expect(blank.text).toContain("The message is empty: say what the agent should do.");
  const ok = await call("task_create", { prompt: "Add a --dry-run flag", code: "dry" });
  expect(ok.text).not.toContain('"isError":true');
  expect(await tasks()).toEqual(["honest", "dry"]);
});

test("the API's send route (the dashboard's message box) and ask refuse a blank or 1 MB text with 400 naming the bound", async () => {
  const big = "x".repeat(1024 * 1024);
  await expect(p.api("POST", "/api/tasks/honest/send", { message: " \n " })).rejects.toThrow(/400 .*The message is empty/);
  await expect(p.api("POST", "/api/tasks/honest/send", { message: big })).rejects.toThrow(
    /400 .*The message is 1048576 bytes, over lazy's bound of 102400 bytes/,
  );
  await expect(p.api("POST", "/api/ask", { question: "  " })).rejects.toThrow(/400 .*The question is empty: say what you want to know/);
  const honest = await p.api("GET", "/api/tasks/honest");
  expect(honest.task.status).toBe("queued");
  expect(honest.events.filter((e: { kind: string }) => e.kind === "user")).toEqual([]);
});
