/**
 * `lazy export T` on an accepted task: one JSON file (docs/export.md) with the diff, the commits,
 * the Agent Trace notes on them, the task's audit rows, usage and cost, its events, the person's
 * messages and review comments, and who accepted it; each part's sha256 in the manifest, checked
 * here by other processes (a bun script, jq | sha256sum). Written 0600, never over a file without
 * --force; `[provenance] prompts = false` leaves the person's words out. A task made by hand (no
 * container); its requests go through the real proxy on its grant.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { verifyBundle } from "../helpers/evidence";
import { upstream } from "../helpers/fixtures";
import { handMadeTask, markDone } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
let p: Project;
let commits: string[];
const MODEL = "claude-sonnet-4-5-20250929";
const toml = (extra = "") => `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n${extra}`;
const file = (name: string) => join(p.root, "..", `${p.root.split("/").at(-1)}-${name}`);
const read = (f: string) => JSON.parse(readFileSync(f, "utf8"));
const part = (doc: any, name: string) => JSON.parse(doc.parts[name]);

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({ toml: toml() });
  sh(p.root, "printf 'x\\n' > f.txt && git add f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm base");
  await p.setCredential("anthropic", `sk-ant-api03-EXPORT-${"e".repeat(70)}AA`);
  commits = await handMadeTask(
    p,
    "ex",
    [
      { files: { "a.txt": "one\n" }, message: "add a\n" },
      { files: { "f.txt": "x\ny\n" }, message: "extend f\n" },
    ],
    "Add a and extend f",
  );
  const g = await p.grant({ role: "agent", task: "ex" });
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${g.proxyUrl}/v1/messages?beta=true`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.arrayBuffer();
    expect(res.status).toBe(200);
  }
  for (const c of commits) sh(p.root, `git notes --ref agent-trace add -m '{"version":"0.1","vcs":{"type":"git","revision":"${c}"}}' ${c}`);
  await markDone(p, ["ex"]);
  // A message the person sent (lazy send) and a review, as the store keeps them.
  const db = new Database(join(p.stateDir, "store.db"));
  const add = db.query("INSERT INTO events (task_id, at, kind, data) SELECT id, ?, ?, ? FROM tasks WHERE code = 'ex'");
  add.run(Date.now(), "user", JSON.stringify({ text: "also extend f" }));
  add.run(Date.now(), "review", JSON.stringify({ comments: [{ path: "a.txt", line: 1, side: "new", text: "say one" }] }));
  db.close();
  await p.ok(["accept", "ex"]);
}, 180_000);

afterAll(() => cleanupAll(mock));

describe("lazy export", () => {
  test("one file, 0600, every part's sha256 recomputed by other processes matches the manifest", async () => {
    const out = file("ex.json");
    const r = await p.ok(["export", "ex", "-o", out]);
    expect(r.stdout).toContain(`Wrote ${out}`);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const doc = read(out);
    expect(doc.format).toBe("lazy-evidence/1");
    const names = doc.manifest.parts.map((x: any) => x.name);
    expect(names.sort()).toEqual(
      [
        "audit.json",
        "commits.json",
        "decision.json",
        "diff.patch",
        "events.json",
        "review.json",
        "task.json",
        "trace.json",
        "usage.json",
      ].sort(),
    );
    const checked = await verifyBundle(out);
    expect(checked.unlisted).toEqual([]);
    for (const x of checked.parts) {
      expect(x.ok, x.name).toBe(true);
      expect(checked.sha256sum[x.name], x.name).toBe(doc.manifest.parts.find((m: any) => m.name === x.name).sha256);
    }

    // What each part says, as lazy recorded it.
    expect(doc.parts["diff.patch"]).toContain("+one");
    expect(doc.parts["diff.patch"]).toContain("+y");
    const merge = sh(p.root, "git rev-parse main").out.trim();
    expect(part(doc, "task.json")).toMatchObject({
      code: "ex",
      status: "accepted",
      prompt: "Add a and extend f",
      merge,
      harness: "claude",
    });
    expect(part(doc, "commits.json").commits.map((c: any) => c.commit)).toEqual(commits);
    expect(part(doc, "trace.json").records.map((t: any) => [t.commit, t.record.vcs.revision])).toEqual(commits.map((c) => [c, c]));
    const audit = part(doc, "audit.json");
    expect(audit.rows.length).toBe(3);
    for (const row of audit.rows) expect(row).toMatchObject({ path: "/v1/messages", status: 200, modelServed: MODEL, taskRef: "ex" });
    const usage = part(doc, "usage.json");
    expect(usage.spent.requests).toBe(3);
    expect(usage.models.map((m: any) => m.model)).toEqual([MODEL]);
    expect(usage.spent.usd).toBeGreaterThan(0);
    const decision = part(doc, "decision.json");
    const me = sh(p.root, "id -un").out.trim();
    expect(decision.decision).toMatchObject({ to: "accepted", by: { user: me, uid: process.getuid!(), via: "cli" } });
    expect(decision.accept.merge).toBe(merge);
    const review = part(doc, "review.json");
    expect(review.messages.map((m: any) => m.text)).toEqual(["also extend f"]);
    expect(review.reviews[0].comments[0]).toMatchObject({ path: "a.txt", line: 1, text: "say one" });
  });

  test("an existing file is not replaced without --force; with it, it is", async () => {
    const out = file("kept.json");
    writeFileSync(out, "mine\n");
    const r = await p.run(["export", "ex", "-o", out]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${out} exists; --force replaces it`);
    expect(readFileSync(out, "utf8")).toBe("mine\n");
    await p.ok(["export", "ex", "-o", out, "--force"]);
    expect(read(out).manifest.task.code).toBe("ex");
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  test("[provenance] prompts = false leaves the prompt, the person's messages and the review comments out", async () => {
    p.writeToml(toml("\n[provenance]\nprompts = false\n"));
    const out = file("quiet.json");
    await p.ok(["export", "ex", "-o", out]);
    const doc = read(out);
    const text = readFileSync(out, "utf8");
    expect(doc.manifest.prompts).toBe(false);
    expect(doc.parts["review.json"]).toBeUndefined();
    expect(doc.manifest.left_out.map((l: any) => l.name)).toEqual(["review.json"]);
    expect(part(doc, "task.json").prompt).toBeUndefined();
    for (const words of ["Add a and extend f", "also extend f", "say one"]) expect(text).not.toContain(words);
    for (const x of (await verifyBundle(out)).parts) expect(x.ok, x.name).toBe(true);
    p.writeToml(toml());
  });
});

describe("what lazy export leaves as it is", () => {
  test("code with `?` (a path-like `a/b?c`, ternaries, optional chaining) is byte-identical in diff.patch; only a URL's query is cut", async () => {
    const code = [
      "const x = a/b?c:d;",
      "const y = cond ? a : b;",
      "const z = p?.q ?? r/s?.t;",
      "const re = /^(a|b)?$/;",
      "fetch(base + '/v1/x?y=' + z);",
      "const u = 'https://h.example/p?token=x';",
      "",
    ].join("\n");
    await handMadeTask(p, "code", [{ files: { "code.ts": code }, message: "code with ? in it a/b?c\n" }], "Write code");
    await markDone(p, ["code"]);
    const out = file("code.json");
    await p.ok(["export", "code", "-o", out]);
    const doc = read(out);
    const base = sh(p.root, "git merge-base main lazy/code").out.trim();
    const git = sh(
      p.root,
      `git diff --no-color --no-ext-diff --no-textconv --no-renames --no-relative --binary --full-index ${base} lazy/code`,
    ).out;
    expect(git).toContain("+const x = a/b?c:d;");
    expect(doc.parts["diff.patch"]).toBe(git.replace("https://h.example/p?token=x", "https://h.example/p?[query removed]"));
    expect(doc.manifest.parts.find((x: any) => x.name === "diff.patch").redacted).toBe(1);
    expect(part(doc, "commits.json").commits[0].message).toBe("code with ? in it a/b?c\n");
  });

  test("exporting a task that never ran writes no run for it in the store", async () => {
    await handMadeTask(p, "norun", [{ files: { "n.txt": "n\n" }, message: "n\n" }], "Never ran");
    await markDone(p, ["norun"]);
    const runs = () => {
      const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
      try {
        return (
          db.query("SELECT COUNT(*) AS n FROM runs WHERE task_id = (SELECT id FROM tasks WHERE code = 'norun')").get() as { n: number }
        ).n;
      } finally {
        db.close();
      }
    };
    expect(runs()).toBe(0);
    const out = file("norun.json");
    await p.ok(["export", "norun", "-o", out]);
    expect(part(read(out), "task.json")).toMatchObject({ code: "norun", profile: "a", harness: "claude" });
    expect(runs()).toBe(0);
  });
});
