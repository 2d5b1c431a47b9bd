/**
 * Every MCP tool that writes or starts work is bounded (issue 35, findings 4 and 9): a
 * prompt-injected agent in a real task container floods `finish` and `ask_human` (6,000 calls
 * each, at the tools' largest texts: 8,000-character summaries grew store.db by 50 MB in 3.4 s
 * before); a builder session past `[build] max_tasks` is refused; and with `[limits]
 * max_running = 1` a second task's turn is queued, shown as queued, and started when the first
 * ends. Real binary, real Claude Code in a real container, real MCP calls.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { anthropicProject, copying, settledAs } from "../helpers/fixtures";
import { cleanupAll, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-MCPBOUNDS-" + "b".repeat(71) + "AA";
const FLOOD = 6000;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY, {
    readme: false,
    files: copying(import.meta.dir, "mcp-bounds-agent.mjs"),
    extra: "\n[limits]\nmax_running = 1\n\n[build]\nmax_tasks = 2\n",
  }));
}, 120_000);
afterAll(() => cleanupAll(anthropic));

/** What the store holds, through its WAL: its pages in use (a reader sees what the daemon wrote and not yet checkpointed). */
function storeBytes(): number {
  const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
  try {
    const n = (q: string) => Object.values(db.query(q).get() as Record<string, number>)[0]!;
    return (n("PRAGMA page_count") - n("PRAGMA freelist_count")) * n("PRAGMA page_size");
  } finally {
    db.close();
  }
}

/** A turn whose agent runs the flood script for `tool`; what the agent saw. */
async function flood(code: string, tool: "finish" | "ask_human"): Promise<any> {
  anthropic.answer({
    text: "done.",
    toolUse: { name: "Bash", input: { command: `node mcp-bounds-agent.mjs ${tool} ${FLOOD}`, description: "flood", timeout: 600000 } },
  });
  await p.ok(["task", "add", `Flood ${tool}`, "--code", code]);
  await p.ok(["start", code]);
  await settledAs(p, code, tool === "ask_human" ? "waiting" : "done");
  const r = JSON.parse(readFileSync(join(p.stateDir, "worktrees", code, `flood-${tool}.json`), "utf8"));
  expect(r.hasToken).toBe(true);
  return r;
}

describe("a prompt-injected agent flooding the writing MCP tools", () => {
  test("6,000 finish calls with 8,000-character summaries: 3 kept, the rest refused with the bound, store.db grows < 1 MB", async () => {
    await p.ok(["task", "list"]); // the daemon and its store exist
    const before = storeBytes();
    const r = await flood("finisher", "finish");
    const grew = storeBytes() - before;
    expect(r.ok + r.toolError, r.otherSample).toBe(FLOOD);
    expect(r.ok).toBe(3);
    // The turn is told why, and what to do.
    expect(r.sample).toContain("a turn keeps at most 3 summaries (finish calls)");
    expect(r.sample).toContain("end your turn now");
    const events = (await p.json(["task", "show", "finisher"])).events;
    expect(events.filter((e: any) => e.kind === "finish")).toHaveLength(3);
    expect(grew, `store.db grew by ${grew} bytes`).toBeLessThan(1024 * 1024);
    // The refusals are counted once, when their minute ends.
    const counted = await until(
      async () => {
        const ev = (await p.json(["task", "show", "finisher"])).events.filter((e: any) => e.kind === "calls_refused");
        return ev.length ? ev : undefined;
      },
      90_000,
      "the refused count",
    );
    expect(counted.map((e: any) => e.data)).toEqual([{ tool: "finish", refused: FLOOD - 3, perTurn: 3, perMinute: 3 }]);
    expect((await p.ok(["logs", "finisher"])).stdout).toContain(`${FLOOD - 3} finish call(s) refused: past 3 a turn or 3 a minute`);
  }, 900_000);

  test("6,000 ask_human calls: 3 questions stored, Home's inbox shows the task's one question; the agent is told to end its turn", async () => {
    const before = storeBytes();
    const r = await flood("asker", "ask_human");
    expect(r.ok + r.toolError, r.otherSample).toBe(FLOOD);
    expect(r.ok).toBe(3);
    expect(r.sample).toContain("a turn asks at most 3 questions");
    expect(storeBytes() - before).toBeLessThan(1024 * 1024);
    const events = (await p.json(["task", "show", "asker"])).events;
    expect(events.filter((e: any) => e.kind === "question")).toHaveLength(3);
    const inbox = await p.api<any>("GET", "/api/board/inbox");
    const mine = inbox.questions.filter((q: any) => q.task.code === "asker");
    expect(mine).toHaveLength(1);
    expect(mine[0].question.length).toBeLessThanOrEqual(4000);
  }, 900_000);
});

describe("a builder session past [build] max_tasks", () => {
  test("task_create past 2 is refused naming the cap and how a person raises it; no third task is made", async () => {
    const s = await p.api<{ mcp: { url: string; token: string } }>("POST", "/api/build/session", { name: "planner", pid: process.pid });
    const call = async (name: string, args: unknown, id: number) => {
      const res = await fetch(s.mcp.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${s.mcp.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } }),
      });
      expect(res.status).toBe(200);
      return (await res.json()).result;
    };
    const made = [];
    for (let i = 0; i < 12; i++) made.push(await call("task_create", { prompt: `planned ${i}`, code: `planned-${i}` }, i + 1));
    expect(made.filter((r) => !r.isError)).toHaveLength(2);
    const refused = made.find((r) => r.isError);
    expect(refused.content[0].text).toContain("a builder session creates at most 2 tasks");
    expect(refused.content[0].text).toContain("[build] max_tasks in lazy.toml");
    const codes = (await p.json<any[]>(["task", "list"])).map((t) => t.code);
    expect(codes.filter((c) => c?.startsWith("planned-"))).toEqual(["planned-0", "planned-1"]);
    // Starting: at most 2 distinct tasks (tasks a person made count the same).
    await p.ok(["task", "add", "a person's task", "--code", "persons"]);
    anthropic.reset();
    anthropic.reply = { text: "Nothing to do." };
    const starts = [];
    for (const [i, t] of ["planned-0", "planned-1", "persons"].entries()) starts.push(await call("task_start", { task: t }, 100 + i));
    expect(starts.slice(0, 2).map((r) => r.isError ?? false)).toEqual([false, false]);
    expect(starts[2].isError).toBe(true);
    expect(starts[2].content[0].text).toContain("a builder session starts at most 2 tasks");
    expect((await p.json(["task", "show", "persons"])).task.status).toBe("queued");
    expect((await p.json(["task", "show", "persons"])).events.map((e: any) => e.kind)).toEqual(["created"]);
    await settledAs(p, "planned-0");
    await settledAs(p, "planned-1");
  }, 900_000);
});

describe("[limits] max_running = 1", () => {
  test("a second task's turn is queued (shown as such everywhere) and starts when the first's ends", async () => {
    // The first turn runs until the test lets it go: its agent waits for a file in its worktree.
    anthropic.reset();
    anthropic.answer({
      text: "first done.",
      toolUse: {
        name: "Bash",
        input: { command: "while [ ! -f go ]; do sleep 0.2; done; echo went", description: "wait", timeout: 600000 },
      },
    });
    await p.ok(["task", "add", "The first", "--code", "first"]);
    await p.ok(["start", "first"]);
    await until(
      async () => ((await p.json(["task", "show", "first"])).task.status === "running" ? true : undefined),
      300_000,
      "first running",
    );
    await until(() => anthropic.received.some((r) => r.method === "POST") || undefined, 300_000, "the first turn's model request");
    await p.ok(["task", "add", "The second", "--code", "second"]);
    const started = await p.ok(["start", "second"]);
    expect(started.stdout).toContain("Task second: queued — 1 of [limits] max_running = 1 turns run now");
    expect(started.stdout).toContain("starts by itself when one ends (place 1 in the queue)");
    const listed = (await p.ok(["task", "list"])).stdout.split("\n").find((l) => l.includes("second"));
    expect(listed).toContain("queued (#1 for a turn)");
    expect((await p.json(["task", "list"])).find((t: any) => t.code === "second")).toMatchObject({ status: "queued", queuePlace: 1 });
    expect((await p.ok(["task", "show", "second"])).stdout).toContain("Queued:  #1 for a turn: [limits] max_running turns run now");
    const row = (await p.api<any>("GET", "/api/board/tasks/second")).task;
    expect(row).toMatchObject({ status: "queued", queuePlace: 1 });
    expect(row.why).toContain("Queued: [limits] max_running turns run now");
    expect((await p.json(["task", "show", "first"])).task.status).toBe("running");
    // A third queued behind it, then stopped: it leaves the queue and never starts.
    await p.ok(["task", "add", "The third", "--code", "third"]);
    expect((await p.ok(["start", "third"])).stdout).toContain("(place 2 in the queue)");
    const stopped = await p.ok(["stop", "third"]);
    expect(stopped.stdout).toContain("Took task third's turn out of the queue: it does not start (lazy start third queues it again).");
    expect((await p.ok(["task", "list"])).stdout.split("\n").find((l) => l.includes("third"))).not.toContain("for a turn");
    // The first turn ends: the second starts by itself.
    anthropic.answer({ text: "second done." });
    writeFileSync(join(p.stateDir, "worktrees", "first", "go"), "");
    await settledAs(p, "first");
    const second = await settledAs(p, "second");
    const kinds = second.events.map((e: any) => (e.kind === "status" ? `${e.data.from}→${e.data.to}` : e.kind));
    expect(kinds.slice(0, 3)).toEqual(["created", "queued", "queued→running"]);
    const firstEnded = (await p.json(["task", "show", "first"])).events.findLast(
      (e: any) => e.kind === "status" && e.data.from === "running",
    ).at;
    const secondRan = second.events.find((e: any) => e.kind === "status" && e.data.to === "running").at;
    expect(secondRan >= firstEnded).toBe(true);
    const third = await p.json(["task", "show", "third"]);
    expect(third.task.status).toBe("queued");
    expect(third.events.some((e: any) => e.kind === "stop" && e.data.queued)).toBe(true);
    expect(third.events.some((e: any) => e.kind === "status" && e.data.to === "running")).toBe(false);
  }, 900_000);
});
