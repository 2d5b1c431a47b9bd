/**
 * Writing a turn's records never stalls the daemon (issue 38, the review's finding): every git
 * runs without blocking the thread, a turn with 5,000 tool calls and a commit of 2,000 files
 * costs a bounded number of git runs (one per commit, one notes commit), each note stays within
 * what readers accept (MAX_NOTE: cut down and said, never larger), all of a turn's notes are
 * one notes commit that keeps a person's notes (flat or fanned out, and one written meanwhile),
 * a turn with no new commit gathers no facts, and a rejected branch's records go while accepted
 * work's stay. git is counted and held through a `git` first on PATH that logs each run and, on
 * `fast-import`, can wait for the test (a gate) or slip in a person's note (a race).
 * Records are checked against the Agent Trace schema (test/fixtures/agent-trace-record.schema.json).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Ajv from "ajv/dist/2020";
import addFormats from "ajv-formats";
import * as Provenance from "../../src/provenance";
import { until } from "../helpers/lazy";
import { turnFacts } from "../helpers/turn-facts";

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const valid = ajv.compile(JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/agent-trace-record.schema.json"), "utf8")));

const base = mkdtempSync(join(tmpdir(), "lazy-provenance-bounds-"));
const root = join(base, "repo");
const bin = join(base, "bin");
const LOG = join(base, "git.log");
const GATE = join(base, "gate");
const RACE = join(base, "race");
const REAL_GIT = Bun.which("git")!;
const savedPath = process.env.PATH;

beforeAll(() => {
  mkdirSync(root);
  mkdirSync(bin);
  writeFileSync(
    join(bin, "git"),
    `#!/bin/sh
printf '%s\\n' "$*" >> '${LOG}'
case " $* " in *" fast-import "*)
  if [ -e '${GATE}' ]; then : > '${GATE}.reached'; while [ -e '${GATE}' ]; do sleep 0.02; done; fi
  if [ -e '${RACE}' ]; then c=$(cat '${RACE}'); rm -f '${RACE}'; '${REAL_GIT}' -c user.name=Person -c user.email=p@example.com notes --ref agent-trace add -f -m 'raced in' "$c"; fi ;;
esac
exec '${REAL_GIT}' "$@"
`,
  );
  chmodSync(join(bin, "git"), 0o755);
  process.env.PATH = `${bin}:${savedPath}`;
  sh("git init -q -b main && git config user.name Dev && git config user.email dev@example.com && git commit -q --allow-empty -m init");
});
afterAll(() => {
  process.env.PATH = savedPath;
  rmSync(base, { recursive: true, force: true });
});

function sh(cmd: string): string {
  const r = Bun.spawnSync(["sh", "-c", cmd], { cwd: root, stdout: "pipe", stderr: "pipe", env: { ...process.env, PATH: savedPath } });
  if (r.exitCode !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.toString().trim();
}
/** The git runs logged since `mark` (a line count). */
const runsSince = (mark: number) => (existsSync(LOG) ? readFileSync(LOG, "utf8").trim().split("\n").slice(mark) : []);
const logLines = () => (existsSync(LOG) ? readFileSync(LOG, "utf8").trim().split("\n").length : 0);
const notesCommits = () => Number(sh("git rev-list --count refs/notes/agent-trace 2>/dev/null || echo 0"));

const facts = turnFacts;

const FILES = 2_000;
const TOOLS = 5_000;
/** Tool call i writes src/f<i mod 2000>.ts; the file's content is its last writer's (i = 4000+k, else 2000+k). */
const contentOf = (i: number) => `export const v${i} = "file ${i % FILES} by call ${i}";\n${`// pad ${i} ${"x".repeat(60)}\n`.repeat(28)}`;
const lastWriter = (k: number) => (k < TOOLS - 2 * FILES ? 2 * FILES + k : FILES + k);

describe("a turn's records on the daemon's thread", () => {
  test("5,000 tool calls and a commit of 2,000 files: git runs bounded, the thread free meanwhile, each note within MAX_NOTE and valid", async () => {
    sh("git checkout -q -b lazy/t");
    const from = sh("git rev-parse HEAD");
    mkdirSync(join(root, "src"), { recursive: true });
    for (let k = 0; k < FILES; k++) writeFileSync(join(root, "src", `f${k}.ts`), contentOf(lastWriter(k)));
    sh("git add -A src && git commit -qm 'two thousand files'");
    writeFileSync(join(root, "small.ts"), "export const small = 1;\n");
    sh("git add small.ts && git commit -qm small");
    const to = sh("git rev-parse HEAD");
    const [big, small] = sh(`git rev-list --reverse ${from}..${to}`).split("\n") as [string, string];
    const tools: Provenance.ToolCall[] = Array.from({ length: TOOLS }, (_, i) => ({
      id: `toolu_${i}`,
      name: "Write",
      input: `file_path: /home/u/.lazy/worktrees/t/src/f${i % FILES}.ts\ncontent: ${contentOf(i)}`,
      at: 11 + 2 * i,
    }));
    const calls = Array.from({ length: TOOLS }, (_, i) => ({ id: 100 + i, at: 10 + 2 * i, served: "claude-sonnet-4-5", asked: null }));

    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("still here") });
    const mark = logLines();
    writeFileSync(GATE, "");
    let done = false;
    const writing = Provenance.writeTurn(root, "lazy/t", from, to, facts({ tools, calls })).finally(() => {
      done = true;
    });
    try {
      // Held at the notes commit: the records are made, the daemon's thread must still answer.
      await until(() => existsSync(`${GATE}.reached`), 120_000, "the turn's notes commit");
      const answer = await fetch(`http://127.0.0.1:${server.port}/`);
      expect(await answer.text()).toBe("still here");
      expect(done).toBe(false);
    } finally {
      rmSync(GATE, { force: true });
      server.stop(true);
    }
    const r = await writing;
    rmSync(`${GATE}.reached`, { force: true });
    expect(r.written.sort()).toEqual([big, small].sort());
    // One run to list the commits, one diff per commit, one to read the notes ref, one fast-import.
    const runs = runsSince(mark);
    expect(runs.length, runs.join("\n")).toBeLessThanOrEqual(2 + 4);
    expect(runs.filter((l) => l.includes("fast-import"))).toHaveLength(1);
    // One notes commit for the turn.
    expect(notesCommits()).toBe(1);

    const note = sh(`git notes --ref agent-trace show ${big}`);
    expect(Buffer.byteLength(note)).toBeLessThanOrEqual(Provenance.MAX_NOTE);
    const rec = JSON.parse(note);
    expect(valid(rec), JSON.stringify(valid.errors)).toBe(true);
    // Its 2,000 tool inputs made it too large: they were cut, and it says so.
    const lazy = rec.metadata["dev.lazy"];
    expect(lazy.cut).toBe(true);
    expect(lazy.trimmed.join(" ")).toContain("tool inputs");
    expect(r.skipped.join("\n")).toContain(`${big.slice(0, 12)}: its record was cut to fit`);
    // Every file is there, each range under the tool call that wrote it (the index got them right).
    expect(rec.files).toHaveLength(FILES);
    for (const k of [0, 999, 1000, 1999]) {
      const file = rec.files.find((f: any) => f.path === `src/f${k}.ts`);
      const tool = file.conversations[0].related.find((x: any) => x.type === "tool_call").url;
      expect(tool).toBe(`lazy:task/abcd1234/turn/1/tool/toolu_${lastWriter(k)}`);
      // The model call that asked for it: the last before lazy read the call.
      expect(file.conversations[0].related.find((x: any) => x.type === "model_call").url).toBe(`lazy:audit/${100 + lastWriter(k)}`);
    }
    // The turn's audit rows once for the record, not per file.
    expect(lazy.related).toHaveLength(50);
    expect(note.split("lazy:audit/").length - 1).toBeLessThanOrEqual(50 + FILES);
    const smallRec = JSON.parse(sh(`git notes --ref agent-trace show ${small}`));
    expect(valid(smallRec)).toBe(true);
    expect(smallRec.files.map((f: any) => f.path)).toEqual(["small.ts"]);
  }, 300_000);

  test("a record that cannot be cut small enough is skipped with its reason, never written larger", async () => {
    const from = sh("git rev-parse HEAD");
    writeFileSync(join(root, "tiny.ts"), "export const tiny = 1;\n");
    sh("git add tiny.ts && git commit -qm tiny");
    const to = sh("git rev-parse HEAD");
    const r = await Provenance.writeTurn(root, "lazy/t", from, to, facts(), { ...Provenance.LIMITS, note: 200 });
    expect(r.written).toEqual([]);
    expect(r.skipped.join("\n")).toMatch(new RegExp(`${to.slice(0, 12)}: its record.* is over 200 bytes`));
    expect(sh(`git notes --ref agent-trace list ${to} 2>&1 || true`)).toContain("no note found");
  });

  test("a turn with no new commit lists its commits and gathers nothing else", async () => {
    const tip = sh("git rev-parse HEAD");
    const mark = logLines();
    let gathered = false;
    const r = await Provenance.writeTurn(root, "lazy/t", tip, tip, () => {
      gathered = true;
      return facts();
    });
    expect(r).toEqual({ written: [], skipped: [], commits: 0 });
    expect(gathered).toBe(false);
    // Commits a person's branch already holds are not the turn's either.
    sh("git branch person-copy HEAD");
    const r2 = await Provenance.writeTurn(root, "lazy/t", sh("git rev-parse HEAD~1"), tip, () => {
      gathered = true;
      return facts();
    });
    expect(r2.commits).toBe(0);
    expect(gathered).toBe(false);
    expect(runsSince(mark).length).toBeLessThanOrEqual(1);
    sh("git branch -D person-copy");
  });

  test("the turn's byte budget: commits past it get no record, and it is said", async () => {
    const from = sh("git rev-parse HEAD");
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(root, `b${i}.txt`), `${"line\n".repeat(2_000)}`);
      sh(`git add b${i}.txt && git commit -qm b${i}`);
    }
    const r = await Provenance.writeTurn(root, "lazy/t", from, sh("git rev-parse HEAD"), facts(), { ...Provenance.LIMITS, bytes: 15_000 });
    expect(r.commits).toBe(3);
    expect(r.written.length).toBeLessThan(3);
    expect(r.skipped.join("\n")).toContain("the turn's patch budget (15000 bytes) was spent");
  });
});

describe("one notes commit per turn, and the notes already there", () => {
  test("a person's notes, flat and fanned out, and one written while lazy writes, all stay and all show", async () => {
    // A person's notes: one flat (git notes add), one in a fanned-out tree (ab/cdef…, as git makes for many notes).
    sh("git checkout -q main");
    writeFileSync(join(root, "p1.txt"), "p1\n");
    sh("git add p1.txt && git commit -qm p1");
    const p1 = sh("git rev-parse HEAD");
    writeFileSync(join(root, "p2.txt"), "p2\n");
    sh("git add p2.txt && git commit -qm p2");
    const p2 = sh("git rev-parse HEAD");
    sh(`git notes --ref agent-trace add -m 'person flat' ${p1}`);
    const blob = sh("printf 'person fanned\\n' | git hash-object -w --stdin");
    const idx = join(base, "index");
    sh(
      `GIT_INDEX_FILE=${idx} git read-tree refs/notes/agent-trace && GIT_INDEX_FILE=${idx} git update-index --add --cacheinfo 100644,${blob},${p2.slice(0, 2)}/${p2.slice(2)} && tree=$(GIT_INDEX_FILE=${idx} git write-tree) && c=$(git commit-tree -p refs/notes/agent-trace -m fanned $tree) && git update-ref refs/notes/agent-trace $c`,
    );
    expect(sh(`git notes --ref agent-trace show ${p2}`)).toBe("person fanned");
    const before = notesCommits();

    sh("git checkout -q lazy/t");
    const from = sh("git rev-parse HEAD");
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(root, `n${i}.txt`), `n${i}\n`);
      sh(`git add n${i}.txt && git commit -qm n${i}`);
      made.push(sh("git rev-parse HEAD"));
    }
    // A person writes a note at the moment lazy reads the ref: lazy starts again from theirs.
    writeFileSync(RACE, p1);
    const r = await Provenance.writeTurn(root, "lazy/t", from, made.at(-1)!, facts());
    expect(existsSync(RACE)).toBe(false);
    expect(r.written.sort()).toEqual([...made].sort());
    // The person's raced note and lazy's one commit for the turn's three records.
    expect(notesCommits()).toBe(before + 2);
    expect(sh("git log -1 --format=%an refs/notes/agent-trace")).toBe("lazy");
    expect(sh(`git notes --ref agent-trace show ${p1}`)).toBe("raced in");
    expect(sh(`git notes --ref agent-trace show ${p2}`)).toBe("person fanned");
    for (const c of made) expect(JSON.parse(sh(`git notes --ref agent-trace show ${c}`)).vcs.revision).toBe(c);
    const listed = sh("git notes --ref agent-trace list")
      .split("\n")
      .map((l) => l.split(" ")[1]);
    for (const c of [p1, p2, ...made]) expect(listed).toContain(c);
  });
});

describe("a rejected task's records go with its branch", () => {
  test("notes of commits only the branch held are dropped in one commit; merged work's and a person's stay", async () => {
    sh("git checkout -q main && git checkout -q -b lazy/gone");
    const from = sh("git rev-parse HEAD");
    writeFileSync(join(root, "g1.txt"), "g1\n");
    sh("git add g1.txt && git commit -qm g1");
    const kept = sh("git rev-parse HEAD");
    writeFileSync(join(root, "g2.txt"), "g2\n");
    sh("git add g2.txt && git commit -qm g2");
    const gone = sh("git rev-parse HEAD");
    expect((await Provenance.writeTurn(root, "lazy/gone", from, gone, facts())).written.sort()).toEqual([kept, gone].sort());
    // A person merged g1 into their branch: it is held by another ref.
    sh(`git checkout -q main && git merge -q --ff-only ${kept}`);
    const person = sh("git notes --ref agent-trace list").split("\n").length;
    const before = notesCommits();
    const only = await Provenance.branchOnly(root, "lazy/gone");
    expect(only).toEqual([gone]);
    expect(await Provenance.dropNotes(root, only)).toBe(1);
    expect(notesCommits()).toBe(before + 1);
    expect(sh(`git notes --ref agent-trace list ${gone} 2>&1 || true`)).toContain("no note found");
    expect(JSON.parse(sh(`git notes --ref agent-trace show ${kept}`)).vcs.revision).toBe(kept);
    expect(sh("git notes --ref agent-trace list").split("\n")).toHaveLength(person - 1);
    // Nothing of it noted: no notes commit at all.
    expect(await Provenance.dropNotes(root, [sh("git rev-list --max-parents=0 main")])).toBe(0);
    expect(notesCommits()).toBe(before + 1);
  });

  test("a note written while the records are dropped is not undone", async () => {
    sh("git checkout -q main && git checkout -q -b lazy/gone2");
    const from = sh("git rev-parse HEAD");
    writeFileSync(join(root, "h1.txt"), "h1\n");
    sh("git add h1.txt && git commit -qm h1");
    const gone = sh("git rev-parse HEAD");
    expect((await Provenance.writeTurn(root, "lazy/gone2", from, gone, facts())).written).toEqual([gone]);
    const person = sh("git rev-list --max-parents=0 main");
    // A person notes a commit at the moment lazy commits the drop: lazy starts again from theirs.
    writeFileSync(RACE, person);
    expect(await Provenance.dropNotes(root, [gone])).toBe(1);
    expect(existsSync(RACE)).toBe(false);
    expect(sh(`git notes --ref agent-trace show ${person}`)).toBe("raced in");
    expect(sh(`git notes --ref agent-trace list ${gone} 2>&1 || true`)).toContain("no note found");
  });
});

describe("another task's commits, merged by this task's agent", () => {
  test("keep that task's records: they are not this turn's, and no note of theirs is replaced", async () => {
    // Task B's turn: one commit on lazy/b, its record written.
    sh("git checkout -q main && git checkout -q -b lazy/b");
    const bFrom = sh("git rev-parse HEAD");
    writeFileSync(join(root, "b-work.txt"), "b's work\n");
    sh("git add b-work.txt && git commit -qm b-work");
    const bWork = sh("git rev-parse HEAD");
    const bFacts = facts({ task: { id: "bbbb0000", code: "b", title: "Task B" } });
    expect((await Provenance.writeTurn(root, "lazy/b", bFrom, bWork, bFacts)).written).toEqual([bWork]);
    // Task A's agent reads every object (they are shared read-only) and merges B's commit, then commits its own.
    sh("git checkout -q main && git checkout -q -b lazy/a");
    const aFrom = sh("git rev-parse HEAD");
    sh(`git merge -q --no-ff --no-edit ${bWork}`);
    writeFileSync(join(root, "a-work.txt"), "a's work\n");
    sh("git add a-work.txt && git commit -qm a-work");
    const aWork = sh("git rev-parse HEAD");
    const aFacts = facts({ task: { id: "aaaa0000", code: "a", title: "Task A" } });
    const r = await Provenance.writeTurn(root, "lazy/a", aFrom, aWork, aFacts);
    expect(r.written).not.toContain(bWork);
    expect(r.written).toContain(aWork);
    const noteOf = (c: string) => JSON.parse(sh(`git notes --ref agent-trace show ${c}`));
    expect(noteOf(bWork).metadata["dev.lazy"].task.id).toBe("bbbb0000");
    expect(noteOf(aWork).metadata["dev.lazy"].task.id).toBe("aaaa0000");
  });
});

describe("matching ranges to tool calls against text made to be slow", () => {
  // A substring search can cost the input's length times the probe's: 1,000 inputs of 2,000 "a"
  // against a 1,400-character line of "a…b…a" took 5.7 s of the daemon's thread in one record,
  // and a 1,400-character file name against 33,000 such inputs 3.1 s. The probe is now cut short
  // and each search charged for both lengths; the test's timeout is the bound (a linear pass
  // takes milliseconds).
  test("a line and a file name built against the search finish, and credit nothing they do not hold", () => {
    const line = `${"a".repeat(700)}b${"a".repeat(699)}`;
    const tools = Array.from({ length: 1_000 }, (_, i) => ({
      id: `t${i}`,
      name: "Write",
      input: `file_path: src/f.ts\ncontent: ${"a".repeat(1_960)}`,
      at: 1_000 + i,
    }));
    const f = facts({ tools });
    const ranges = Array.from({ length: 64 }, (_, r) => ({ start: 2 * r + 1, end: 2 * r + 1, hash: "sha256:x", lines: [line] }));
    const rec = Provenance.recordOf("0".repeat(40), { files: [{ path: "src/f.ts", binary: false, ranges }], cut: false }, f);
    // No input holds the line: each range goes to the last call naming the file, never to one holding other text.
    const urls = rec.files[0]!.conversations.flatMap((c) => c.related?.filter((r) => r.type === "tool_call").map((r) => r.url) ?? []);
    expect(urls.every((u) => u.endsWith("/tool/t999"))).toBe(true);

    const odd = `${"a".repeat(700)} ${"a".repeat(699)}`;
    const many = Array.from({ length: 33_000 }, (_, i) => ({ id: `e${i}`, name: "Edit", input: "a".repeat(2_000), at: i }));
    const index = Provenance.indexTurn(facts({ tools: many }), [odd]);
    expect(index.writers.get(odd) ?? []).toEqual([]);
  }, 60_000);
});
