/**
 * A hostile agent against lazy export's size (issue 38): a diff larger than the bundle's budget,
 * thousands of commits with long messages, thousands of long tool calls and its audit rows. What
 * must hold: the file stays within the budget (64 MiB by default, `--max-mb` otherwise), each part
 * that lost something says so in the manifest (`cut`, `why`), what is kept is the start of what
 * lazy has, every sha256 still matches, and the person is told (with the remedy). The parts
 * together take at most the budget, even when the diff leaves less room than the smallest part;
 * git's diff runs once, even when it is past the budget with bytes that are not UTF-8. A task
 * made by hand (no container); its requests go through the real proxy on its grant. The daemon
 * finds a `git` first on PATH that counts the bundle's diffs (`--full-index`) and runs git.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verifyBundle } from "../helpers/evidence";
import { upstream } from "../helpers/fixtures";
import { handMadeTask, markDone } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider;
let p: Project;
const MiB = 1024 * 1024;
const COMMITS = 2_000;
const EVENTS = 3_000;
const file = (name: string) => join(p.root, "..", `${p.root.split("/").at(-1)}-${name}`);
const entry = (doc: any, name: string) => doc.manifest.parts.find((x: any) => x.name === name);
/** What the parts take of the document, as JSON strings in it. */
const taken = (doc: any) =>
  Object.values(doc.parts as Record<string, string>).reduce((n, t) => n + Buffer.byteLength(JSON.stringify(t)), 0);
/** Each JSON part is the document JSON.stringify(part, null, 2) gives, with one newline at the end. */
const wellMade = (doc: any) => {
  for (const [name, text] of Object.entries(doc.parts as Record<string, string>))
    if (name.endsWith(".json")) expect(text, name).toBe(`${JSON.stringify(JSON.parse(text), null, 2)}\n`);
};
const bin = mkdtempSync(join(tmpdir(), "lazy-export-git-"));
const diffs = join(bin, "diffs");
const realGit = Bun.which("git")!;

/** `n` commits on `branch`, each with a 2 KiB message, written by git fast-import (one process). */
async function manyCommits(branch: string, n: number): Promise<void> {
  const from = sh(p.root, `git rev-parse ${branch}`).out.trim();
  let stream = "";
  for (let i = 0; i < n; i++) {
    const msg = `commit ${i}\n\n${`filler ${i} `.repeat(200).slice(0, 2048)}\n`;
    stream += `commit refs/heads/${branch}\ncommitter Agent <a@example.com> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}${i === 0 ? `from ${from}\n` : ""}\n`;
  }
  const proc = Bun.spawn(["git", "fast-import", "--quiet"], { cwd: p.root, stdin: new TextEncoder().encode(stream), stderr: "pipe" });
  expect(await proc.exited, await new Response(proc.stderr).text()).toBe(0);
}

/** `n` tool calls of the task, 2 KiB of input each, as turn-watch stores them. */
function manyEvents(code: string, n: number): void {
  const db = new Database(join(p.stateDir, "store.db"));
  const add = db.query("INSERT INTO events (task_id, at, kind, data) SELECT id, ?, 'tool', ? FROM tasks WHERE code = ?");
  db.transaction(() => {
    for (let i = 0; i < n; i++) add.run(Date.now(), JSON.stringify({ name: "Bash", input: `echo ${i} ${"y".repeat(2048)}` }), code);
  })();
  db.close();
}

beforeAll(async () => {
  mock = await Mock.anthropic();
  writeFileSync(
    join(bin, "git"),
    `#!/bin/sh\ncase " $* " in *" --full-index "*) echo diff >> '${diffs}';; esac\nexec '${realGit}' "$@"\n`,
    { mode: 0o755 },
  );
  writeFileSync(diffs, "");
  p = new Project({
    toml: `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\n`,
    env: { PATH: `${bin}:${process.env.PATH ?? ""}` },
  });
  sh(p.root, "printf 'x\\n' > f.txt && git add f.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm base");
  await p.setCredential("anthropic", `sk-ant-api03-BUDGET-${"b".repeat(70)}AA`);
  // "huge": one commit of an 81 MB text file (a diff past the default budget), then the flood of commits.
  await handMadeTask(p, "huge", [], "Huge");
  const big = sh(
    p.root,
    "git checkout -q lazy/huge && head -c 60000000 /dev/urandom | base64 -w 76 > big.txt && git add big.txt && git -c user.name=Agent -c user.email=a@example.com commit -qm big && git checkout -q main && rm -f big.txt",
  );
  expect(big.code, big.err).toBe(0);
  await manyCommits("lazy/huge", COMMITS);
  // "many": no diff to speak of, but its commits, tool calls and audit rows are more than a small budget holds.
  await handMadeTask(p, "many", [{ files: { "m.txt": "m\n" }, message: "m\n" }], "Many");
  await manyCommits("lazy/many", COMMITS);
  const g = await p.grant({ role: "agent", task: "many" });
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
      body: JSON.stringify({ model: "claude-sonnet-4-5-20250929", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
    });
    await res.arrayBuffer();
  }
  // "short": a diff of 2-byte lines past a 1 MiB budget, a byte that is not UTF-8 at its start.
  await handMadeTask(p, "short", [], "Short lines");
  const short = sh(
    p.root,
    "git checkout -q lazy/short && (printf 'caf\\351\\n'; yes a | head -n 400000) > s.txt && git add s.txt && git -c user.name=Agent -c user.email=a@example.com commit -qm short && git checkout -q main && rm -f s.txt",
  );
  expect(short.code, short.err).toBe(0);
  // "oneline": a line of 3 MiB (words and spaces) between two short ones, past a 1 MiB budget.
  await handMadeTask(p, "oneline", [], "One long line");
  const oneline = sh(
    p.root,
    "git checkout -q lazy/oneline && (echo first; yes 'word' | head -n 700000 | tr '\\n' ' '; echo; echo last) > l.txt && git add l.txt && git -c user.name=Agent -c user.email=a@example.com commit -qm oneline && git checkout -q main && rm -f l.txt",
  );
  expect(oneline.code, oneline.err).toBe(0);
  await markDone(p, ["huge", "many", "short", "oneline"]);
  manyEvents("huge", EVENTS);
  manyEvents("many", EVENTS);
}, 300_000);

afterAll(() => cleanupAll(mock));

describe("lazy export against a hostile agent's sizes", () => {
  test("a diff past the default budget: the file stays within 64 MiB, the diff is its first lines, every part that lost something says so", async () => {
    const out = file("huge.json");
    const r = await p.ok(["export", "huge", "-o", out]);
    expect(statSync(out).size).toBeLessThan(64 * MiB + 256 * 1024);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    expect(doc.manifest.budget).toBe(64 * MiB);
    const diff = entry(doc, "diff.patch");
    expect(diff).toMatchObject({ cut: true });
    expect(diff.why).toContain("past the bundle's budget of 64 MiB");
    // What is kept is the start of the real diff, whole lines.
    const patch: string = doc.parts["diff.patch"];
    expect(patch.length).toBeGreaterThan(32 * MiB);
    expect(patch.endsWith("\n")).toBe(true);
    const head = sh(p.root, `git diff --no-color --binary --full-index main...lazy/huge | head -c ${1 * MiB}`).out;
    expect(patch.startsWith(head.slice(0, head.lastIndexOf("\n") + 1))).toBe(true);
    // Nothing is left for the rest of the agent's flood: cut, and each part is still a JSON document.
    for (const name of ["commits.json", "events.json", "audit.json"]) {
      expect(entry(doc, name), name).toMatchObject({ cut: true });
      expect(JSON.parse(doc.parts[name]).cut, name).toBe(true);
    }
    for (const name of ["task.json", "decision.json", "usage.json", "review.json"]) expect(entry(doc, name).cut, name).toBeUndefined();
    expect(r.stderr).toContain("diff.patch, commits.json");
    expect(r.stderr).toContain("were cut");
    expect(r.stderr).toContain("lazy export huge --max-mb 256 keeps more");
    expect(taken(doc)).toBeLessThanOrEqual(doc.manifest.budget);
    wellMade(doc);
    for (const x of (await verifyBundle(out)).parts) expect(x.ok, x.name).toBe(true);
  });

  test("--max-mb 2: thousands of commits, tool calls and audit rows are cut to the first that fit, the rest named in the manifest", async () => {
    const out = file("many.json");
    const r = await p.ok(["export", "many", "-o", out, "--max-mb", "2"]);
    expect(statSync(out).size).toBeLessThan(2 * MiB + 64 * 1024);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    expect(doc.manifest.budget).toBe(2 * MiB);
    expect(entry(doc, "diff.patch").cut).toBeUndefined();
    const commits = JSON.parse(doc.parts["commits.json"]);
    expect(commits.cut).toBe(true);
    expect(commits.commits.length).toBeGreaterThan(0);
    expect(commits.commits.length).toBeLessThan(COMMITS + 1);
    // Oldest first, as git log --reverse gives them: the kept ones are the first.
    const first = sh(p.root, `git log --reverse --format=%H main..lazy/many | head -n ${commits.commits.length}`).out.trim().split("\n");
    expect(commits.commits.map((c: any) => c.commit)).toEqual(first);
    expect(entry(doc, "commits.json").why).toContain("git printed more than the bundle's budget (2 MiB)");
    expect(entry(doc, "commits.json").why).toContain(`: ${commits.commits.length.toLocaleString("en-US")} of `);
    for (const name of ["events.json", "audit.json"]) expect(entry(doc, name), name).toMatchObject({ cut: true });
    expect(r.stderr).toContain("--max-mb 8 keeps more");
    expect(taken(doc)).toBeLessThanOrEqual(doc.manifest.budget);
    wellMade(doc);
    for (const x of (await verifyBundle(out)).parts) expect(x.ok, x.name).toBe(true);
  });

  test("the diff leaves less room than the smallest part: the parts still take at most the budget, and git's diff ran once", async () => {
    const out = file("short.json");
    writeFileSync(diffs, "");
    await p.ok(["export", "short", "-o", out, "--max-mb", "1"]);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    expect(entry(doc, "diff.patch")).toMatchObject({ cut: true });
    expect(doc.parts["diff.patch"]).toContain("+caf\uFFFD\n+a\n");
    // The diff took all but a few bytes; each part after it is `{"cut": true}` at least, and room was kept for them.
    for (const name of ["commits.json", "trace.json", "events.json", "audit.json"])
      expect(entry(doc, name), name).toMatchObject({ cut: true });
    expect(taken(doc)).toBeLessThanOrEqual(doc.manifest.budget);
    // One run of the bundle's diff: cut at the budget, its bytes as git printed them, never asked again.
    expect(readFileSync(diffs, "utf8")).toBe("diff\n");
    wellMade(doc);
    for (const x of (await verifyBundle(out)).parts) expect(x.ok, x.name).toBe(true);
  });

  test("a line of megabytes past the budget: scrubbed a piece at a time, and never kept in part", async () => {
    const out = file("oneline.json");
    await p.ok(["export", "oneline", "-o", out, "--max-mb", "1"]);
    const doc = JSON.parse(readFileSync(out, "utf8"));
    const diff: string = doc.parts["diff.patch"];
    expect(entry(doc, "diff.patch")).toMatchObject({ cut: true });
    // Whole lines only: the diff's head and "+first", not a byte of the long line.
    expect(diff.endsWith("+first\n")).toBe(true);
    expect(diff).not.toContain("word");
    expect(taken(doc)).toBeLessThanOrEqual(doc.manifest.budget);
    for (const x of (await verifyBundle(out)).parts) expect(x.ok, x.name).toBe(true);
  });

  test("a --max-mb out of bounds is refused before anything is read or written", async () => {
    for (const mb of ["0", "513", "1.5", "lots"]) {
      const out = file(`bad-${mb}.json`);
      const r = await p.run(["export", "many", "-o", out, "--max-mb", mb]);
      expect(r.code, mb).not.toBe(0);
      expect(r.stderr).toContain("--max-mb takes a whole number of MiB from 1 to 512");
      expect(() => statSync(out)).toThrow();
    }
  });
});
