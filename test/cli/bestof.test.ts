/**
 * Best-of-N without a container: what is refused before anything is made (an unknown profile,
 * an empty prompt, bad --n, compare of a code that is no group), a group made by lazy task add
 * (its candidates, one per profile, each a task of its own), the store's move forward (a store
 * from before groups keeps every task), and lazy reject asking first.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, Tasks } from "../../src/store";
import { MIGRATIONS } from "../../src/store/migrations";
import { oneRequest, upstream } from "../helpers/fixtures";
import { BIN, cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({
    toml: `${upstream(mock.url)}\n[budget]\nper_task_tokens = 40\n\n[profiles.a]\nharness = "claude"\nmodel = "claude-sonnet-4-5"\n\n[profiles.b]\nharness = "claude"\nmodel = "claude-haiku-4-5"\n`,
  });
  await p.setCredential("anthropic", `sk-ant-api03-${"b".repeat(80)}AA`);
});

afterAll(async () => {
  await cleanupAll(mock);
});

const taskCount = async () => (await p.json<any[]>(["task", "list"])).length;

describe("best-of-N: refused before anything is made", () => {
  test("--profiles naming an unknown profile is refused naming it; no task is made", async () => {
    const before = await taskCount();
    for (const cmd of [
      ["run", "--profiles", "a,nope", "do it"],
      ["task", "add", "--profiles", "a,nope", "do it"],
    ]) {
      const r = await p.run(cmd);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('No profile "nope"');
      expect(r.stderr).toMatch(/use one of .*a.*b/);
    }
    expect(await taskCount()).toBe(before);
  });

  test("an empty prompt, an empty profile name, --n below 2, and --profiles with --n are refused; no task is made", async () => {
    const before = await taskCount();
    const empty = await p.run(["run", "--profiles", "a,b", "  "]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/prompt/i);
    const hole = await p.run(["task", "add", "--profiles", "a,,b", "do it"]);
    expect(hole.code).toBe(2);
    expect(hole.stderr).toContain("empty name");
    const one = await p.run(["task", "add", "--n", "1", "do it"]);
    expect(one.code).toBe(2);
    expect(one.stderr).toContain("--n is how many candidates (2 or more)");
    const both = await p.run(["task", "add", "--n", "2", "--profiles", "a,b", "do it"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("not both");
    // The API alike (the dashboard's and scripts' way in).
    const api = await fetch(`http://127.0.0.1:${p.runtime()!.api.port}/api/groups`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token()}`, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "", profiles: ["a", "b"] }),
    });
    expect(api.status).toBe(400);
    expect(await taskCount()).toBe(before);
  });

  test("compare of a code that is not a group says what it is", async () => {
    const none = await p.run(["compare", "no-such-group"]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('No group "no-such-group"');
    await p.ok(["task", "add", "plain task", "--code", "plain"]);
    const plain = await p.run(["compare", "plain"]);
    expect(plain.code).not.toBe(0);
    expect(plain.stderr).toContain('"plain" is a task, not a group');
  });
});

describe("best-of-N: a group", () => {
  test("task add --profiles makes one queued candidate per profile, in one group; compare lists them; a candidate's code points to its group", async () => {
    const g = await p.json(["task", "add", "--profiles", "a,b", "Write hello.txt", "--code", "hello"]);
    expect(g.group).toBe("hello");
    expect(g.tasks.map((t: any) => [t.code, t.profile, t.status, t.group])).toEqual([
      ["hello-a", "a", "queued", "hello"],
      ["hello-b", "b", "queued", "hello"],
    ]);
    const n = await p.json(["task", "add", "--n", "3", "--profile", "a", "Write hi.txt", "--code", "three"]);
    expect(n.tasks.map((t: any) => t.code)).toEqual(["three-1", "three-2", "three-3"]);
    const again = await p.run(["task", "add", "--profiles", "a,b", "x", "--code", "hello"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('group with code "hello" already exists');

    const c = await p.json(["compare", "hello", "--no-check"]);
    expect(c.candidates.map((x: any) => [x.code, x.status, x.tokens, x.usd, x.wallMs])).toEqual([
      ["hello-a", "queued", 0, 0, 0],
      ["hello-b", "queued", 0, 0, 0],
    ]);
    expect(c.check).toBeNull();
    const text = (await p.ok(["compare", "hello"])).stdout;
    expect(text).toContain("Group hello: Write hello.txt");
    expect(text).toMatch(/hello-a\s+a\s+queued/);
    expect(text).toMatch(/hello-b\s+b\s+queued/);
    const asTask = await p.run(["compare", "hello-a"]);
    expect(asTask.stderr).toContain("it is a candidate of group hello (lazy compare hello)");
  });
});

describe("best-of-N: lazy run's exit code", () => {
  test("a profile with no credential refuses the whole group before anything is made: exit 5, naming the profile and lazy auth set", async () => {
    const before = await taskCount();
    // The built-in codex profile's credential (openai) was never stored; a's (anthropic) was.
    for (const args of [
      ["run", "--n", "2", "--profile", "codex", "Say hi", "--code", "nokey"],
      ["run", "--profiles", "a,codex", "Say hi", "--code", "nokey"],
    ]) {
      const r = await p.run(args);
      expect(r.code, r.stderr).toBe(5);
      expect(r.stderr).toContain('Profile codex needs the "openai" credential, which is not stored: run lazy auth set openai.');
      expect(r.stderr).toContain("No candidate was made or started");
      expect(r.stdout + r.stderr).not.toContain("nokey-");
    }
    const json = await p.run(["run", "--profiles", "a,codex", "Say hi", "--code", "nokey", "--json"]);
    expect(json.code).toBe(5);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: "refused",
      error: {
        code: "credential_missing",
        facts: { reason: "group_credentials", missing: [{ reason: "credential_not_stored", profile: "codex", credential: "openai" }] },
      },
    });
    // No candidate was made, so none failed: the group does not exist.
    expect(await taskCount()).toBe(before);
    expect((await p.run(["compare", "nokey"])).stderr).toContain('No group "nokey"');
  });
});

describe("best-of-N: budgets per candidate", () => {
  test("a candidate over its budget cannot start a turn; the other's spending is its own", async () => {
    await p.ok(["task", "add", "--profiles", "a,b", "Spend", "--code", "spend"]);
    // One model request on spend-a's grant (47 tokens: over its 40), none on spend-b's.
    expect(await oneRequest(p, "spend-a")).toBe(200);
    // The audit's counters are written in batches, a moment after the answer.
    const c = await until(
      async () => {
        const r = await p.json(["compare", "spend", "--no-check"]);
        return r.candidates[0].tokens > 0 ? r : undefined;
      },
      10_000,
      "spend-a's tokens in the counters",
    );
    expect(c.candidates.map((x: any) => [x.code, x.tokens])).toEqual([
      ["spend-a", 47],
      ["spend-b", 0],
    ]);
    const a = await p.run(["start", "spend-a"]);
    expect(a.code).not.toBe(0);
    expect(a.stderr).toContain("spend-a reached its token budget (47 of 40 tokens)");
    // spend-b is not over: raising its budget says what it spent (nothing) and nothing over.
    const b = await p.api("POST", "/api/tasks/spend-b/budget", { tokens: 1 });
    expect([b.spent.tokens, b.over]).toEqual([0, null]);
  });
});

describe("lazy reject asks before deleting a branch", () => {
  test("without a terminal and without --yes it refuses, saying to pass --yes; the task is untouched", async () => {
    await p.ok(["task", "add", "to reject", "--code", "rj"]);
    const r = await p.run(["reject", "rj"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Reject task rj and delete its branch lazy/rj");
    expect(r.stderr).toContain("pass --yes");
    expect((await p.json(["task", "show", "rj"])).task.status).toBe("queued");
  });

  test("on a terminal it asks y/N; no answer (end of input) is no", async () => {
    const out = await p.onTerminal(["reject", "rj"]);
    expect(out).toContain("Reject task rj and delete its branch lazy/rj? [y/N]");
    expect(out).toContain("Nothing done");
    expect((await p.json(["task", "show", "rj"])).task.status).toBe("queued");
  });

  test("on a terminal, y rejects", async () => {
    await p.ok(["task", "add", "to reject on a terminal", "--code", "rj-tty"]);
    const proc = Bun.spawn(["script", "-qec", `'${BIN}' reject rj-tty`, "/dev/null"], {
      cwd: p.root,
      env: { ...p.fullEnv(), TERM: "xterm" },
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    // The answer once the question is on the terminal.
    const reader = proc.stdout.getReader();
    let seen = "";
    while (!seen.includes("[y/N]")) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    proc.stdin.write("y\n");
    await proc.stdin.flush();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += new TextDecoder().decode(value);
    }
    await proc.exited;
    expect(seen).toContain("Task rj-tty: rejected");
    expect((await p.json(["task", "show", "rj-tty"])).task.status).toBe("rejected");
  });

  test("--yes rejects", async () => {
    const r = await p.ok(["reject", "rj", "--yes"]);
    expect(r.stdout).toContain("Task rj: rejected");
    expect((await p.json(["task", "show", "rj"])).task.status).toBe("rejected");
  });
});

describe("the store moves forward", () => {
  test("a store from before groups keeps its tasks and events; they are in no group", () => {
    const file = join(mkdtempSync(join(tmpdir(), "lazy-groups-")), "store.db");
    const old = new Database(file, { create: true });
    const before = MIGRATIONS.findIndex((m) => typeof m === "string" && m.includes("ADD COLUMN grp"));
    for (const m of MIGRATIONS.slice(0, before)) typeof m === "string" ? old.exec(m) : m(old);
    old.exec(`PRAGMA user_version = ${before}`);
    old.exec(
      "INSERT INTO tasks (id, code, title, prompt, status, profile, created_at, updated_at) VALUES ('abcd1234', 'old', 'Old', 'old prompt', 'done', 'claude', 1, 2)",
    );
    old.exec("INSERT INTO events (task_id, at, kind, data) VALUES ('abcd1234', 1, 'created', '{}')");
    old.close();
    const db = open(file);
    const t = Tasks.resolve(db, "old");
    expect([t.id, t.title, t.prompt, t.status, t.group]).toEqual(["abcd1234", "Old", "old prompt", "done", null]);
    expect(Tasks.events(db, t.id).length).toBe(1);
    const made = Tasks.addMany(db, [
      { prompt: "p", profile: "a", code: "g-a", group: "g" },
      { prompt: "p", profile: "b", code: "g-b", group: "g" },
    ]);
    expect(Tasks.inGroup(db, "g").map((x) => x.id)).toEqual(made.map((x) => x.id));
    // All or nothing: a clash on the second code leaves no first.
    expect(() =>
      Tasks.addMany(db, [
        { prompt: "p", profile: "a", code: "h-a", group: "h" },
        { prompt: "p", profile: "b", code: "g-b", group: "h" },
      ]),
    ).toThrow(/already exists/);
    expect(Tasks.inGroup(db, "h")).toEqual([]);
  });
});
