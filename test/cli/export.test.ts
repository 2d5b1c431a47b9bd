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
