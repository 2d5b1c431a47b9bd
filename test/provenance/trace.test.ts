/**
 * Provenance (issue 38): a real Claude Code turn in a container, told by the mock provider to
 * Write two files and commit each (two commits), gets one Agent Trace record per commit as a
 * git note under refs/notes/agent-trace: its ranges are the commit's diff (new side), its
 * conversation names the Write call and the model served, and it validates against the Agent
 * Trace JSON schema — vendored in test/fixtures/agent-trace-record.schema.json from
 * https://github.com/cursor/agent-trace/blob/2754f077f3e50c1fb5088183f5c9362077cc8ca1/README.md
 * (6.1 "Trace Record Schema", spec 0.1.0), checked with ajv (draft 2020-12, formats on).
 * Then `lazy trace FILE:LINE` after `lazy accept` (a merge: the notes stay on the agent's
 * commits) names the task, turn, model and tool call, and a person's line is "not written by an
 * agent task".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { closeBrowser, signedIn } from "../dashboard/browser";
import { anthropicProject, settledAs, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-PROVENANCE-${"p".repeat(69)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
export const validRecord = ajv.compile(
  JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/agent-trace-record.schema.json"), "utf8")),
);

beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

const git = (args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: p.root, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

/** Whether lazy has written the commit's record (it does so right after the turn's status moves). */
const hasNote = (commit: string) => git(["notes", "--ref", "agent-trace", "show", commit]).code === 0;

/** The commit's new-side ranges, read independently of lazy: `git show -U0` hunk headers per file. */
function ranges(commit: string): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  let file = "";
  for (const l of git(["show", "--format=", "-U0", "--no-renames", commit]).out.split("\n")) {
    if (l.startsWith("+++ b/")) file = l.slice(6);
    const m = /^@@ -\S+ \+(\d+)(?:,(\d+))? @@/.exec(l);
    if (m && file) {
      const n = m[2] === undefined ? 1 : Number(m[2]);
      if (n) out[file] = [...(out[file] ?? []), [Number(m[1]), Number(m[1]) + n - 1]];
    }
  }
  return out;
}

const A = "export const a = 1;\nexport const b = 2;\nexport const c = 3;\n";
const B = "export function twice(n: number) {\n  return n * 2;\n}\n";

describe("a trace record per agent commit", () => {
  test("two Write calls, two commits: each commit's note is a valid Agent Trace record whose ranges are its diff", async () => {
    await p.ok(["task", "add", "Add the two modules", "--code", "tr"]);
    const wt = join(p.stateDir, "worktrees", "tr");
    anthropic.answer({
      text: "Both modules are added.",
      steps: [
        { name: "Write", input: { file_path: `${wt}/src/a.ts`, content: A } },
        { name: "Bash", input: { command: "git add src/a.ts && git commit -qm 'add a'", description: "commit a" } },
        { name: "Write", input: { file_path: `${wt}/src/b.ts`, content: B } },
        { name: "Bash", input: { command: "git add src/b.ts && git commit -qm 'add b'", description: "commit b" } },
      ],
    });
    await p.ok(["start", "tr"]);
    await settledAs(p, "tr");
    const commits = git(["rev-list", "--reverse", "HEAD..refs/heads/lazy/tr"]).out.trim().split("\n");
    expect(commits).toHaveLength(2);
    // Written right after the turn's status moves.
    await until(() => hasNote(commits.at(-1)!), 10_000, "the trace record of the turn's last commit");
    // One note per commit of the turn, and none on the person's.
    const noted = git(["notes", "--ref", "agent-trace", "list"])
      .out.trim()
      .split("\n")
      .map((l) => l.split(" ")[1]);
    expect(noted.sort()).toEqual([...commits].sort());
    const files = ["src/a.ts", "src/b.ts"];
    for (const [i, c] of commits.entries()) {
      const shown = git(["notes", "--ref", "agent-trace", "show", c]);
      expect(shown.code, shown.err).toBe(0);
      const rec = JSON.parse(shown.out);
      expect(validRecord(rec), JSON.stringify(validRecord.errors)).toBe(true);
      expect(rec.vcs).toEqual({ type: "git", revision: c });
      expect(rec.tool.name).toBe("lazy");
      // The record's ranges are the commit's diff, file by file.
      const mine = Object.fromEntries(
        rec.files.map((f: any) => [f.path, f.conversations.flatMap((v: any) => v.ranges.map((r: any) => [r.start_line, r.end_line]))]),
      );
      expect(mine).toEqual(ranges(c));
      expect(Object.keys(mine)).toEqual([files[i]!]);
      const conv = rec.files[0].conversations[0];
      expect(conv.contributor.type).toBe("ai");
      expect(conv.contributor.model_id).toMatch(/^anthropic\/claude-/);
      expect(conv.ranges[0].content_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      const tool = conv.related.find((r: any) => r.type === "tool_call");
      expect(tool.url).toMatch(/^lazy:task\/[0-9a-f]+\/turn\/1\/tool\//);
      expect(conv.related.some((r: any) => /^lazy:audit\/\d+$/.test(r.url))).toBe(true);
      const lazy = rec.metadata["dev.lazy"];
      expect(lazy.task.code).toBe("tr");
      expect(lazy.turn).toBe(1);
      expect(lazy.harness).toBe("claude");
      expect(lazy.tools).toHaveLength(1);
      expect(lazy.tools[0]).toMatchObject({ url: tool.url, name: "Write" });
      expect(lazy.tools[0].input).toContain(files[i]!);
      expect(lazy.prompt).toEqual({ kind: "task", text: "Add the two modules" });
    }
    // Only lazy writes the notes ref: its commits are lazy's own.
    expect(git(["log", "-1", "--format=%an <%ae>", "refs/notes/agent-trace"]).out.trim()).toBe("lazy <lazy@localhost>");
  }, 600_000);

  test("a turn a person's lazy send asked for: contributor mixed, the message as its prompt", async () => {
    const wt = join(p.stateDir, "worktrees", "tr");
    anthropic.answer({
      text: "Added c.",
      steps: [
        { name: "Write", input: { file_path: `${wt}/src/c.ts`, content: "export const c = 3;\n" } },
        { name: "Bash", input: { command: "git add src/c.ts && git commit -qm 'add c'", description: "commit c" } },
      ],
    });
    await p.ok(["send", "tr", "Add c too"]);
    await settledAs(p, "tr");
    const c = git(["rev-parse", "refs/heads/lazy/tr"]).out.trim();
    await until(() => hasNote(c), 10_000, "the trace record of the send turn's commit");
    const rec = JSON.parse(git(["notes", "--ref", "agent-trace", "show", c]).out);
    expect(validRecord(rec), JSON.stringify(validRecord.errors)).toBe(true);
    expect(rec.files.map((f: any) => f.path)).toEqual(["src/c.ts"]);
    expect(rec.files[0].conversations[0].contributor.type).toBe("mixed");
    expect(rec.metadata["dev.lazy"]).toMatchObject({ turn: 2, shaped_by: "send", prompt: { kind: "send", text: "Add c too" } });
  }, 600_000);

  test("the dashboard's diff: a new-side line's title names the task, turn, tool call and model (GET …/trace)", async () => {
    const api = await p.api("GET", "/api/tasks/tr/trace?path=src%2Fb.ts&line=2");
    expect(api).toMatchObject({ agent: true, turn: 1, tool: { name: "Write" }, task: { code: "tr" } });
    const { ctx, origin, page } = await signedIn(p);
    try {
      const pg = page.page;
      await pg.goto(`${origin}/tasks/tr`);
      await pg.waitForSelector(".files >> text=src/c.ts", { timeout: 10_000 }); // the diff drawn
      const files = await pg.locator(".files a").allTextContents();
      const line = pg.locator(`[data-file="${files.indexOf("src/b.ts")}"] .hunk [data-k="new:2"]`);
      await line.hover();
      await pg.waitForFunction(
        (i) => document.querySelector<HTMLElement>(`[data-file="${i}"] .hunk [data-k="new:2"]`)?.title.startsWith("Written by task tr"),
        files.indexOf("src/b.ts"),
        { timeout: 10_000 },
      );
      const title = await line.getAttribute("title");
      expect(title).toMatch(/^Written by task tr, turn 1, tool call Write toolu_\w+, model anthropic\/claude-/);
      expect(title).toContain("Asked by the task's prompt: Add the two modules");
      const c = pg.locator(`[data-file="${files.indexOf("src/c.ts")}"] .hunk [data-k="new:1"]`);
      await c.hover();
      await pg.waitForFunction(
        (i) => !!document.querySelector<HTMLElement>(`[data-file="${i}"] .hunk [data-k="new:1"]`)?.title,
        files.indexOf("src/c.ts"),
        { timeout: 10_000 },
      );
      expect(await c.getAttribute("title")).toMatch(/turn 2, tool call Write .*\nAsked by lazy send: Add c too/s);
      expect(page.problems).toEqual([]);
    } finally {
      await ctx.close();
    }
  }, 120_000);

  test("lazy trace FILE:LINE after accept: the task, turn, model and tool call; a person's line is not an agent's", async () => {
    anthropic.answer({ text: "Adds two modules." }); // the accept summary
    await p.ok(["accept", "tr"]);
    const agent = await p.ok(["trace", "src/b.ts:2"]);
    expect(agent.stdout).toContain("src/b.ts:2 was written by an agent task:");
    expect(agent.stdout).toMatch(/task {7}tr \([0-9a-f]+\): /);
    expect(agent.stdout).toMatch(/turn {7}1 \(claude\)/);
    expect(agent.stdout).toMatch(/model {6}anthropic\/claude-\S+ \(contributor: ai\)/);
    expect(agent.stdout).toMatch(/tool call {2}Write toolu_\w+: /);
    expect(agent.stdout).toContain("asked by   the task's prompt: Add the two modules");
    const json = JSON.parse((await p.ok(["trace", "src/a.ts:3", "--json"])).stdout);
    expect(json).toMatchObject({
      file: "src/a.ts",
      line: 3,
      agent: true,
      task: { code: "tr", title: expect.any(String) },
      turn: 1,
      harness: "claude",
      tool: { name: "Write" },
      range: { start_line: 1, end_line: 3 },
      prompt: { kind: "task", text: "Add the two modules" },
    });
    expect(json.contributor.model_id).toMatch(/^anthropic\/claude-/);
    expect(json.commit).toBe(git(["log", "-1", "--format=%H", "--", "src/a.ts"]).out.trim());

    expect((await p.ok(["trace", "src/c.ts:1"])).stdout).toContain("asked by   lazy send: Add c too");
    const person = await p.ok(["trace", "README.md:1"]);
    expect(person.stdout).toMatch(/^README\.md:1 was not written by an agent task: commit [0-9a-f]{12} by Dev/);
    expect(JSON.parse((await p.ok(["trace", "README.md:1", "--json"])).stdout)).toMatchObject({ agent: false, author: { name: "Dev" } });

    // A user error names its cause and its remedy (exit 2).
    const missing = await p.run(["trace", "src/nope.ts:1"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("No file src/nope.ts here");
    const past = await p.run(["trace", "src/a.ts:99"]);
    expect(past.code).toBe(2);
    expect(past.stderr).toContain("Line 99 is past the end of src/a.ts");
    const form = await p.run(["trace", "src/a.ts"]);
    expect(form.code).toBe(2);
    expect(form.stderr).toContain("FILE:LINE");
  }, 600_000);

  test("[provenance] prompts = false: lazy trace leaves the prompt out", async () => {
    appendFileSync(join(p.root, "lazy.toml"), "\n[provenance]\nprompts = false\n");
    const json = JSON.parse((await p.ok(["trace", "src/a.ts:1", "--json"])).stdout);
    expect(json.agent).toBe(true);
    expect(json.prompt).toBeUndefined();
    expect((await p.ok(["trace", "src/a.ts:1"])).stdout).not.toContain("asked by");
  }, 60_000);
});
