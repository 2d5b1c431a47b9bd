/**
 * Reading the trace records back (issue 38), without a container or a daemon: `lazy trace` on a
 * file named with non-ASCII characters (git C-quotes such paths in blame's output unless told
 * not to: the line must still be found in its record's ranges), and git's one note reader
 * (`notesOn`, src/git): the notes of the given commits read directly wherever git's fan-out put
 * them (never by listing the notes ref), a note past NOTE_MAX cut, and what `lazy trace` runs —
 * a `git` first on PATH logs every call: blame of that one line, no `git notes list`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Git from "../../src/git";
import * as Provenance from "../../src/provenance";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import { turnFacts } from "../helpers/turn-facts";

afterAll(cleanupAll);

const facts = (over: Partial<Provenance.TurnFacts> = {}) =>
  turnFacts({
    task: { id: "abcd1234", code: "uni", title: "Write the French module" },
    asked: { kind: "task", text: "Write the French module" },
    ...over,
  });

const ok = (cwd: string, cmd: string) => {
  const r = sh(cwd, cmd);
  if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  return r.out.trim();
};

/** A `git` first on PATH that writes each call's arguments (one line) to `log`, then runs the real one. */
function loggingGit(log: string): string {
  const dir = mkdtempSync(join(tmpdir(), "lazy-gitlog-"));
  const real = Bun.which("git")!;
  writeFileSync(join(dir, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${real}' "$@"\n`);
  chmodSync(join(dir, "git"), 0o755);
  return dir;
}

describe("lazy trace reads a record back", () => {
  test("a line an agent wrote in données/é.ts is traced to its task, turn, tool call and range", async () => {
    const p = new Project({ toml: "" });
    const from = ok(p.root, "git rev-parse HEAD && git checkout -q -b lazy/uni");
    mkdirSync(join(p.root, "données"));
    writeFileSync(join(p.root, "données/é.ts"), "export const un = 1;\nexport const deux = 2;\n");
    ok(p.root, "git add -A données && git -c user.name=Agent -c user.email=agent@example.com commit -qm 'module français'");
    const c = ok(p.root, "git rev-parse HEAD");
    const tool = { id: "toolu_fr", name: "Write", input: JSON.stringify({ file_path: "/w/données/é.ts", content: "…" }), at: 2 };
    expect((await Provenance.writeTurn(p.root, "lazy/uni", from, c, facts({ tools: [tool] }))).written).toEqual([c]);
    // The person merges the task's branch: the line is blamed through the merge to the agent's commit.
    ok(p.root, "git checkout -q main && git -c user.name=Dev -c user.email=dev@example.com merge -q --no-ff -m merge lazy/uni");

    const log = join(p.home, "git.log");
    const path = `${loggingGit(log)}:${process.env.PATH}`;
    const json = JSON.parse((await p.ok(["trace", "données/é.ts:2", "--json"], { env: { PATH: path } })).stdout);
    expect(json).toMatchObject({
      file: "données/é.ts",
      line: 2,
      commit: c,
      at: { path: "données/é.ts", line: 2 },
      agent: true,
      task: { code: "uni" },
      turn: 1,
      tool: { id: "toolu_fr", name: "Write" },
      range: { start_line: 1, end_line: 2 },
      prompt: { kind: "task", text: "Write the French module" },
    });
    const shown = (await p.ok(["trace", "données/é.ts:2"], { env: { PATH: path } })).stdout;
    expect(shown).toContain("données/é.ts:2 was written by an agent task:");
    expect(shown).toContain("tool call  Write toolu_fr: ");
    expect(shown).toMatch(/commit {5}[0-9a-f]{12}, line 2 of données\/é\.ts \(range 1-2\)/);

    // What it ran: blame of that one line, and the note read by the commit's id, not by listing the notes.
    const calls = readFileSync(log, "utf8").trim().split("\n");
    const blames = calls.filter((l) => / blame /.test(l));
    expect(blames).toHaveLength(2);
    for (const b of blames) expect(b).toContain("-L 2,2 --");
    expect(calls.some((l) => / notes .*list/.test(l))).toBe(false);
  }, 60_000);
});

describe("git's one note reader", () => {
  const root = mkdtempSync(join(tmpdir(), "lazy-notes-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  ok(root, "git init -q -b main && git config user.name Dev && git config user.email dev@example.com");
  for (let i = 0; i < 4; i++) ok(root, `git commit -q --allow-empty -m c${i}`);
  const commits = ok(root, "git rev-list --reverse HEAD").split("\n");

  test("it is async, and reads notes wherever git's fan-out keeps them, as git notes show does", async () => {
    // One note written by git (no fan-out), the others placed at fan-outs of one, two and three levels.
    ok(root, `git notes --ref x add -m plain ${commits[0]}`);
    const blob = (t: string) => ok(root, `printf '%s' '${t}' | git hash-object -w --stdin`);
    const [a, b, c] = [commits[1]!, commits[2]!, commits[3]!];
    const tree = ok(
      root,
      `git read-tree --empty --index-output=.git/notes-index && GIT_INDEX_FILE=.git/notes-index sh -c '` +
        `git update-index --add --cacheinfo 100644,${ok(root, `git rev-parse refs/notes/x:${commits[0]}`)},${commits[0]} && ` +
        `git update-index --add --cacheinfo 100644,${blob("one level")},${a.slice(0, 2)}/${a.slice(2)} && ` +
        `git update-index --add --cacheinfo 100644,${blob("two levels")},${b.slice(0, 2)}/${b.slice(2, 4)}/${b.slice(4)} && ` +
        `git update-index --add --cacheinfo 100644,${blob("three levels")},${c.slice(0, 2)}/${c.slice(2, 4)}/${c.slice(4, 6)}/${c.slice(6)} && ` +
        `git write-tree'`,
    );
    ok(root, `git update-ref refs/notes/x $(git commit-tree -m notes ${tree})`);
    // git itself finds each.
    expect(ok(root, `git notes --ref x show ${b}`)).toBe("two levels");

    const read = Git.notesOn(root, "refs/notes/x", [...commits, "not-a-commit"]);
    expect(read).toBeInstanceOf(Promise);
    const notes = await read;
    expect(Object.fromEntries([...notes].map(([k, v]) => [commits.indexOf(k), v]))).toEqual({
      0: { text: "plain\n", cut: false },
      1: { text: "one level", cut: false },
      2: { text: "two levels", cut: false },
      3: { text: "three levels", cut: false },
    });
    // A ref with no notes, and commits without one: nothing, no failure.
    expect((await Git.notesOn(root, "refs/notes/none", commits)).size).toBe(0);
  });

  test("a note past NOTE_MAX: its first NOTE_MAX bytes, marked cut; readRecord refuses it with its cause", async () => {
    const big = join(root, "big.json");
    writeFileSync(big, `{"files":[],"pad":"${"p".repeat(Git.NOTE_MAX)}"}`);
    ok(root, `git notes --ref agent-trace add -F ${big} ${commits[1]}`);
    ok(root, `git notes --ref agent-trace add -m '{"files":[],"id":"small"}' ${commits[2]}`);
    const notes = await Git.notesOn(root, Git.AGENT_TRACE_NOTES, [commits[1]!, commits[2]!]);
    const cut = notes.get(commits[1]!)!;
    expect(cut.cut).toBe(true);
    expect(cut.text.length).toBe(Git.NOTE_MAX);
    expect(cut.text.startsWith('{"files":[],"pad":"ppp')).toBe(true);
    expect(notes.get(commits[2]!)).toEqual({ text: '{"files":[],"id":"small"}\n', cut: false });
    expect((await Provenance.readRecord(root, commits[2]!))?.id).toBe("small");
    expect(Provenance.readRecord(root, commits[1]!)).rejects.toThrow(/is over 4194304 bytes: not a record lazy wrote/);
    expect(await Provenance.readRecord(root, commits[0]!)).toBeNull();
  });
});
