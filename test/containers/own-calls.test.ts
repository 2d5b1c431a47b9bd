/**
 * lazy's own model calls: the accept summary and lazy ask, each one prompt in a throwaway
 * container on the agent profile, through the proxy (audited, attributed), never holding the
 * real key; when the call fails, accept still merges and says why there is no summary.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as Store from "../../src/store";
import { TEST_IMAGES } from "../helpers/env";
import { anthropicProject, bash, containerProject, launched, settled, teardown } from "../helpers/fixtures";
import { type Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-OWNCALLS-" + "o".repeat(73) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY, { firstCommit: "empty" })), 120_000);
afterAll(() => teardown(p, anthropic));

/** This project's call containers (running or not). */
const callContainers = () =>
  sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root} --filter name=-call-`).out.split("\n").filter(Boolean);

async function committed(code: string, file: string, change = `echo hi > ${file}`): Promise<void> {
  anthropic.answer(bash("Committed.", `${change} && git add ${file} && git commit -qm 'add ${file}'`, "commit"));
  await launched(p, code, `Add ${file}`);
  expect((await turnEnded(code)).status).toBe("done");
}

/** The task once its turn has ended. */
const turnEnded = async (code: string): Promise<any> => (await settled(p, code)).task;

/**
 * Task summed's a.txt merged into main: the first test does it with its own assertions; a test
 * that needs it and runs alone (bun test -t) does it here.
 */
async function summedAccepted(): Promise<void> {
  if ((await p.run(["task", "show", "summed"])).code === 0) return;
  await committed("summed", "a.txt");
  anthropic.answer({ text: "Adds a.txt with a greeting." });
  await p.ok(["accept", "summed"]);
}

/** Whether a call about no task has run (after one, a warm container waits for the next). */
let askedAboutNoTask = false;
async function warmed(): Promise<void> {
  if (askedAboutNoTask) return;
  anthropic.answer({ text: "Nothing yet." });
  await p.ok(["ask", "anything new?"]);
  askedAboutNoTask = true;
}

describe("lazy's own model calls", () => {
  test("lazy accept writes a summary that came through the proxy, attributed to the task, into the merge commit", async () => {
    await committed("summed", "a.txt");
    anthropic.answer({ text: "Adds a.txt with a greeting." });
    const acc = await p.json(["accept", "summed"]);
    expect(acc.summary).toBe("Adds a.txt with a greeting.");
    expect(acc.summaryError).toBeNull();
    expect(sh(p.root, "git log -1 --format=%B main").out).toContain("Adds a.txt with a greeting.");
    const prompt = anthropic.received.find((r) => r.method === "POST")!.body;
    expect(prompt).toContain("Write the body of a merge commit message");
    expect(prompt).toContain("add a.txt");
    const rows = (await p.json(["stats", "audit", "--task", "summed"])).rows;
    expect(rows.at(-1)).toMatchObject({ taskRef: "summed", role: "agent", status: 200 });
    expect(callContainers()).toEqual([]); // a call about a task leaves no container, warm or not
  }, 600_000);

  test("with the provider failing, accept still merges and says why there is no summary", async () => {
    await committed("unsummed", "b.txt");
    anthropic.reset();
    anthropic.behavior = {
      kind: "status",
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: "no such model" } },
    };
    const r = await p.run(["accept", "unsummed"]);
    anthropic.reset();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Accepted unsummed: 1 commit(s) merged.");
    expect(r.stderr).toContain("The merge has no summary: lazy's own model call (the accept summary, profile claude) failed");
    expect(sh(p.root, "git log --format=%s main").out).toContain("add b.txt");
    expect((await p.json(["task", "show", "unsummed"])).task.status).toBe("accepted");
  }, 600_000);

  test("a branch that changes lazy.toml is not merged until the person says so (--with-config)", async () => {
    sh(p.root, "git add lazy.toml && git -c user.name=Dev -c user.email=dev@example.com commit -qm 'track lazy.toml'");
    await committed("configured", "lazy.toml", "echo '# the agent was here' >> lazy.toml");
    const before = sh(p.root, "git rev-parse main").out.trim();
    const refused = await p.run(["accept", "configured"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("Task configured's branch changes lazy.toml, which decides where lazy sends your credentials");
    expect(refused.stderr).toContain("git diff HEAD...lazy/configured -- lazy.toml");
    expect(refused.stderr).toContain("lazy accept configured --with-config");
    expect(sh(p.root, "git rev-parse main").out.trim()).toBe(before);
    expect((await p.json(["task", "show", "configured"])).task.status).toBe("done");
    anthropic.answer({ text: "Notes the agent in lazy.toml." });
    const acc = await p.json(["accept", "configured", "--with-config"]);
    expect(acc.task.status).toBe("accepted");
    expect(readFileSync(join(p.root, "lazy.toml"), "utf8")).toContain("# the agent was here");
  }, 600_000);

  test("lazy ask with no task is attributed to the project, with where git stands; its container never holds the real key", async () => {
    await summedAccepted();
    anthropic.answer({ text: "Two tasks were accepted." });
    anthropic.behavior = { kind: "silent-then-stream", firstByteDelayMs: 3000, gapMs: 0 };
    sh(p.root, "echo draft > notes.txt");
    const asking = p.run(["ask", "what changed?"]);
    // While the model thinks, the call's harness runs with its placeholder (and the next call's
    // warm container may be starting): nothing in any of them is the real key.
    const environ = (id: string) => sh("/", `docker exec ${id} sh -c 'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"'`).out;
    await until(
      () => callContainers().some((id) => environ(id).includes("ANTHROPIC_API_KEY=")) || undefined,
      120_000,
      "the call's harness",
    );
    for (const id of callContainers()) {
      const inspect = sh("/", `docker inspect ${id}`).out;
      expect(inspect.length).toBeGreaterThan(100);
      expect(inspect).not.toContain(KEY);
      expect(environ(id)).not.toContain(KEY);
    }
    const r = await asking;
    askedAboutNoTask = true;
    anthropic.behavior = { kind: "ok" };
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Two tasks were accepted.");
    const prompt = anthropic.received.find((x) => x.method === "POST")!.body;
    expect(prompt).toContain("Question: what changed?");
    expect(prompt).toContain("summed");
    // Where git stands now, from lazy (the harness's own snapshot is off: a warm one's would be stale).
    expect(prompt).toContain("Git: on branch main");
    expect(prompt).toContain("add a.txt");
    expect(prompt).toContain("?? notes.txt");
    const row = (await p.json(["stats", "audit"])).rows.filter((x: any) => x.method === "POST").at(-1);
    expect(row).toMatchObject({ role: "lazy", taskId: null, status: 200 });
    sh(p.root, "rm notes.txt");
  }, 600_000);

  test("the next call about no task takes the warm container, its harness already waiting; lazy daemon stop removes it", async () => {
    await warmed();
    // After a call about no task, one container waits for the next, Claude Code started in it.
    const warm = await until(
      () => {
        const ids = callContainers();
        const waiting = ids.filter((id) =>
          sh("/", `docker exec ${id} sh -c 'cat /proc/*/cmdline | tr "\\\\0" " "'`).out.includes("--input-format stream-json"),
        );
        return ids.length === 1 && waiting.length === 1 ? ids[0] : undefined;
      },
      120_000,
      "the warm call container",
    );
    expect(sh("/", `docker inspect ${warm}`).out).not.toContain(KEY);
    anthropic.answer({ text: "Nothing is running." });
    const r = await p.run(["ask", "is anything running?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Nothing is running.");
    expect(anthropic.received.find((x) => x.method === "POST")!.body).toContain("Question: is anything running?");
    // The warm one answered and is gone; another waits in its place.
    expect(sh("/", `docker ps -aq --no-trunc --filter id=${warm}`).out.trim()).toBe("");
    const next = await until(() => callContainers().find((id) => !warm.startsWith(id)), 120_000, "the next warm container");
    expect(next).toBeTruthy();
    // The configuration changes under it (another model): the warm one no longer fits; the call
    // runs on what the configuration says now.
    p.writeToml(
      `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[profiles.claude]\nmodel = "claude-haiku-4-5"\n`,
    );
    anthropic.reset();
    const later = await until(
      async () => {
        const x = await p.run(["ask", "which model?"]);
        return anthropic.received.some((y) => y.method === "POST" && y.body.includes('"claude-haiku-4-5"')) ? x : undefined;
      },
      60_000,
      "a call on the new model",
    );
    expect(later.code, later.stderr).toBe(0);
    await p.ok(["daemon", "stop"]);
    expect(callContainers()).toEqual([]);
  }, 600_000);

  test("lazy ask about a running task shares its grant without locking the task's container out", async () => {
    anthropic.answer(
      bash("Committed after the wait.", "sleep 12 && echo w > w.txt && git add w.txt && git commit -qm 'add w.txt'", "wait"),
    );
    await launched(p, "slow", "Add w.txt slowly");
    await until(() => anthropic.received.some((x) => x.method === "POST") || undefined, 300_000, "the task's first model request");
    // While its Bash runs, a call about it (same profile: the task's own grant) comes and goes.
    const asked = await p.run(["ask", "--task", "slow", "what is it doing?"]);
    expect(asked.code, asked.stderr).toBe(0);
    const t = await turnEnded("slow");
    // The task's next request, after the call's container had come and gone, was forwarded.
    expect(t.status).toBe("done");
    const rows = (await p.json(["stats", "audit", "--task", "slow"])).rows.filter((x: any) => x.path.startsWith("/v1/messages"));
    expect(rows.length).toBeGreaterThanOrEqual(3);
    expect(rows.filter((x: any) => x.status !== 200)).toEqual([]);
    expect(sh(p.root, "git log --format=%s lazy/slow").out).toContain("add w.txt");
  }, 600_000);

  test("lazy report writes a Markdown report across tasks through the proxy; a bad --since is a usage error", async () => {
    await summedAccepted();
    anthropic.answer({ text: "# Report\n\n- summed: accepted" });
    const r = await p.run(["report", "--since", "1d"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("# Report");
    const prompt = anthropic.received.find((x) => x.method === "POST")!.body;
    expect(prompt).toContain("Write a short Markdown report");
    expect(prompt).toContain("summed");
    const bad = await p.run(["report", "--since", "yesterday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since "yesterday" is neither a duration');
  }, 300_000);

  test("memory past its bound is compacted through the proxy, agents' notes only: a person's note stays word for word; a failed compaction loses no note", async () => {
    const q = await containerProject(anthropic, KEY, { firstCommit: "empty" });
    await q.ok(["memory", "add", "A person's fact: deploys go through make ship."]);
    // Agents' notes, as memory_write leaves them (written while the daemon is down).
    await q.ok(["daemon", "stop"]);
    const db = Store.open(join(q.stateDir, "store.db"));
    for (let i = 1; i <= 5; i++) Store.Memory.add(db, `agent fact ${i}: ${"x".repeat(1900)}`, "agent", null);
    db.close();
    // A failing provider first: the notes past the bound are all kept.
    anthropic.reset();
    anthropic.behavior = { kind: "status", status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "no" } } };
    await q.ok(["memory", "add", "Another person's fact."]);
    await until(() => anthropic.received.some((x) => x.method === "POST") || undefined, 120_000, "the compaction call");
    await until(() => q.log().includes("project memory was not compacted") || undefined, 120_000, "the failure to be logged");
    expect((await q.json(["memory", "list", "--json"])).notes).toHaveLength(7);
    // Then it answers: the agents' notes are replaced by the compacted ones; the people's stay.
    anthropic.answer({ text: "- five facts about x\n- each one long" });
    await q.ok(["memory", "add", "A third person's fact."]);
    const notes = await until(
      async () => {
        const n = (await q.json(["memory", "list", "--json"])).notes;
        return n.length === 5 ? n : undefined;
      },
      120_000,
      "the compacted memory",
    );
    expect(notes.map((n: any) => [n.text, n.by])).toEqual([
      ["A person's fact: deploys go through make ship.", "human"],
      ["Another person's fact.", "human"],
      ["A third person's fact.", "human"],
      ["five facts about x", "lazy"],
      ["each one long", "lazy"],
    ]);
    const prompt = anthropic.received.find((x) => x.method === "POST")!.body;
    expect(prompt).toContain("agent fact 5");
    expect(prompt).not.toContain("make ship");
  }, 600_000);
});
