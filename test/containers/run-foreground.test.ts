/**
 * `lazy run` as a foreground command: it says the task's code when it is added and the next
 * commands (with that code) when the turn ends, on stderr, the result alone on stdout; its
 * --json document carries the branch, tip, diffstat, tokens and cost; a turn that ends asking the
 * person (ask_human) exits 8 with the question; Ctrl-C asks the daemon to stop the turn and exits
 * 130, and a second Ctrl-C leaves at once saying how to follow or stop it. Real Docker, real
 * Claude Code, a mock provider on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { anthropicProject, commits, settled, teardown } from "../helpers/fixtures";
import { BIN, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-FOREGROUND-${"f".repeat(68)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY));
});
afterAll(() => teardown(p, anthropic));

/** `lazy run ARGS` as a running process, its stderr collected as it comes. */
function running(args: string[], in_: Project = p) {
  const proc = Bun.spawn([BIN, "run", ...args], { cwd: in_.root, env: in_.fullEnv(), stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  let stderr = "";
  const read = (async () => {
    const dec = new TextDecoder();
    for await (const chunk of proc.stderr) stderr += dec.decode(chunk, { stream: true });
  })();
  const stdout = new Response(proc.stdout).text();
  return {
    proc,
    stderr: () => stderr,
    done: async () => {
      const code = await proc.exited;
      await read;
      return { code, stdout: await stdout, stderr };
    },
  };
}

describe("lazy run in the foreground", () => {
  test("it names the task when added and the next commands at the end (stderr); --json has branch, tip, diffstat, tokens, cost", async () => {
    anthropic.reset();
    anthropic.answer(commits("fg.txt", "one\\ntwo\\n", "Wrote fg.txt."));
    const r = await p.run(["run", "Write fg.txt", "--code", "fg", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.status).toBe("done");
    expect(doc.result).toContain("Wrote fg.txt.");
    expect(doc.branch).toBe("lazy/fg");
    expect(doc.tip).toMatch(/^[0-9a-f]{40}$/);
    expect(doc.diffstat).toEqual({ files: 1, insertions: 2, deletions: 0 });
    expect(doc.tokens).toBeGreaterThan(0);
    expect("usd" in doc && "unpriced" in doc).toBe(true);
    expect(r.stderr).toMatch(new RegExp(`Task fg \\(id ${doc.task.id}\\) added`));
    for (const next of ["lazy diff fg", "lazy accept fg", "lazy reject fg"]) expect(r.stderr).toContain(next);

    anthropic.answer({ text: "Nothing to change." });
    const human = await p.run(["run", "Say it", "--code", "fg-2"]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toBe("Nothing to change.\n");
    expect(human.stderr).toContain("Task fg-2 (id ");
    expect(human.stderr).toContain("lazy accept fg-2");
  }, 600_000);

  test("a turn ending on ask_human exits 8; --json has the question; the line says lazy send with the real code", async () => {
    anthropic.reset();
    anthropic.answer({ text: "I asked.", toolUse: { name: "mcp__lazy__ask_human", input: { question: "Which colour?" } } });
    const r = await p.run(["run", "Paint it", "--code", "asker", "--json"]);
    expect(r.code, r.stderr).toBe(8);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ status: "waiting", question: "Which colour?", task: { code: "asker" } });
    expect(r.stderr).toContain('lazy send asker "…"');

    anthropic.answer({ text: "I asked again.", toolUse: { name: "mcp__lazy__ask_human", input: { question: "Which shade?" } } });
    const human = await p.run(["run", "Paint it again", "--code", "asker-2"]);
    expect(human.code, human.stderr).toBe(8);
    expect(human.stderr).toContain('waiting for your answer (lazy send asker-2 "…"): Which shade?');
    expect(human.stderr).not.toContain("lazy send TASK");
    expect(human.stderr).toContain("Task asker-2 asked a question and waits for your answer.");
    // lazy logs reads the same line later.
    expect((await p.ok(["logs", "asker-2"])).stdout).toContain('(lazy send asker-2 "…")');
  }, 600_000);

  test("Ctrl-C asks the daemon to stop the turn, says so, and exits 130; the task waits, stopped", async () => {
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    const run = running(["Take your time", "--code", "intr"]);
    await anthropic.waitFor(1, 180_000);
    await until(() => run.stderr().includes("Task intr"), 10_000, "the task's line");
    run.proc.kill("SIGINT");
    const r = await run.done();
    expect(r.code, r.stderr).toBe(130);
    expect(r.stderr).toContain("Stopping task intr's turn (Ctrl-C again leaves it running)");
    expect(r.stderr).toMatch(/Stopped task intr's turn: it is waiting/);
    const s = await settled(p, "intr");
    expect(s.task.status).toBe("waiting");
    expect(s.events.some((e: any) => e.kind === "stop")).toBe(true);

    // Under --json: the one document, the turn's end as it is, marked interrupted.
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    const js = running(["Take your time", "--code", "intr-json", "--json"]);
    await anthropic.waitFor(1, 180_000);
    await until(() => js.stderr().includes("Task intr-json"), 10_000, "the task's line");
    js.proc.kill("SIGINT");
    const j = await js.done();
    expect(j.code, j.stderr).toBe(130);
    expect(JSON.parse(j.stdout)).toMatchObject({ status: "waiting", interrupted: true, task: { code: "intr-json" } });
    anthropic.reset();
  }, 600_000);

  test("a second Ctrl-C leaves at once, the turn left to itself, saying how to follow it and stop it", async () => {
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    const run = running(["Take your time again", "--code", "intr2"]);
    await anthropic.waitFor(1, 180_000);
    await until(() => run.stderr().includes("Task intr2"), 10_000, "the task's line");
    run.proc.kill("SIGINT");
    await until(() => run.stderr().includes("Stopping task intr2"), 10_000, "the first Ctrl-C's answer");
    run.proc.kill("SIGINT");
    const r = await run.done();
    expect(r.code).toBe(130);
    // The second came while the turn was still ending (a stop takes the harness a second or more):
    // it left without waiting for the stop, which it would otherwise have said.
    expect(r.stderr).toContain("Not waiting: task intr2's turn is left as it is. Follow it: lazy logs intr2 -f; stop it: lazy stop intr2.");
    expect(r.stderr).not.toContain("Stopped task intr2's turn");
    expect(r.stdout).toBe("");
    await settled(p, "intr2");
    // Under --json the second Ctrl-C still leaves one document on stdout.
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    const j = running(["Take your time once more", "--code", "intr3", "--json"]);
    await anthropic.waitFor(1, 180_000);
    await until(() => j.stderr().includes("Task intr3"), 10_000, "the task's line");
    j.proc.kill("SIGINT");
    await until(() => j.stderr().includes("Stopping task intr3"), 10_000, "the first Ctrl-C's answer");
    j.proc.kill("SIGINT");
    const jr = await j.done();
    expect(jr.code).toBe(130);
    expect(JSON.parse(jr.stdout)).toMatchObject({ status: "left", interrupted: true, task: { code: "intr3" } });
    await settled(p, "intr3");
    anthropic.reset();
  }, 600_000);
});

describe("lazy run: Ctrl-C while the task still launches", () => {
  let q: Project;
  let mock: Mock.MockProvider;
  beforeAll(async () => {
    ({ anthropic: mock, p: q } = await anthropicProject(KEY, { container: 'setup = "sleep 6"' }));
  });
  afterAll(() => teardown(q, mock));

  test("the stop waits for the turn to start, then stops it: exit 130, the task waits, stopped", async () => {
    mock.behavior = { kind: "hang" };
    const run = running(["Slow to launch", "--code", "launching"], q);
    await until(() => run.stderr().includes("Running [container] setup: sleep 6"), 180_000, "the setup's line");
    run.proc.kill("SIGINT");
    const { code, stderr } = await run.done();
    expect(code, stderr).toBe(130);
    expect(stderr).toContain("Task launching is still launching: its turn is stopped as soon as it starts.");
    expect(stderr).toMatch(/Stopped task launching's turn: it is waiting/);
    const s = await settled(q, "launching");
    expect(s.task.status).toBe("waiting");
    expect(s.events.some((e: any) => e.kind === "stop")).toBe(true);
    mock.reset();
  }, 600_000);
});
