/**
 * `lazy diff T` (--stat, --json) and `lazy task show T` with branch, base, diffstat and the
 * agent's finish summary (issue 30, Deliver 1). The task's branch is made here with host git, as
 * the agent's commits would land on it (no model turn is needed to read a diff).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { cleanupAll, Project, sh } from "../helpers/lazy";

let p: Project;
let base = "";

beforeAll(async () => {
  p = new Project({ toml: "" });
  sh(
    p.root,
    "git config user.email dev@example.com && git config user.name Dev && printf 'one\\ntwo\\nthree\\n' > a.txt && printf 'lazy.toml\\n' > .gitignore && git add . && git commit -qm init",
  );
  base = sh(p.root, "git rev-parse HEAD").out.trim();
  await p.ok(["task", "add", "change a.txt", "--code", "fix"]);
  // The agent's work on its branch: one line changed, one file added, a binary file.
  sh(
    p.root,
    "git checkout -qb lazy/fix && printf 'one\\nTWO\\nthree\\n' > a.txt && printf 'new\\nfile\\n' > b.txt && printf '\\0\\1\\2' > c.bin && git add . && git commit -qm work && git checkout -q main",
  );
  // The project moves on meanwhile: the diff is still against where the branch forked.
  sh(p.root, "echo later > later.txt && git add later.txt && git commit -qm later");
});

afterAll(cleanupAll);

test("lazy diff shows the branch against where it forked: the files, then the hunks", async () => {
  const r = await p.ok(["diff", "fix"]);
  expect(r.stdout).toContain(`lazy/fix against ${base.slice(0, 12)}`);
  expect(r.stdout).toContain("diff a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
  expect(r.stdout).toContain("diff b.txt\n@@ -0,0 +1,2 @@\n+new\n+file\n");
  expect(r.stdout).toContain("diff c.bin\nBinary file changed\n");
  // The project's own later commit is not the task's change.
  expect(r.stdout).not.toContain("later.txt");
  // Piped: no colour.
  expect(r.stdout).not.toContain("\x1b[");
});

test("lazy diff --stat lists files with counts and the totals; --json gives the same as data", async () => {
  const s = await p.ok(["diff", "fix", "--stat"]);
  expect(s.stdout).toMatch(/ a\.txt\s+\| \+1 -1\n/);
  expect(s.stdout).toMatch(/ b\.txt\s+\| \+2 -0\n/);
  expect(s.stdout).toMatch(/ c\.bin\s+\| binary\n/);
  expect(s.stdout).toContain(" 3 file(s) changed, +3 -1\n");
  expect(s.stdout).not.toContain("@@");
  const j = await p.json(["diff", "fix"]);
  expect(j.branch).toBe("lazy/fix");
  expect(j.base).toBe(base);
  expect(j.total).toEqual({ files: 3, added: 3, removed: 1 });
  expect(j.files.map((f: any) => f.path)).toEqual(["a.txt", "b.txt", "c.bin"]);
  expect(j.files[0].hunks[0].lines).toEqual([" one", "-two", "+TWO", " three"]);
  const js = await p.json(["diff", "fix", "--stat"]);
  expect(js.files[0].hunks).toEqual([]);
  expect(js.total.files).toBe(3);
});

test("lazy task show gives branch, base, the diffstat and the agent's finish summary", async () => {
  const r = await p.ok(["task", "show", "fix"]);
  expect(r.stdout).toMatch(/Branch: {2}lazy\/fix \(tip [0-9a-f]{12}\)/);
  expect(r.stdout).toContain(`Base:    ${base.slice(0, 12)}`);
  expect(r.stdout).toContain(" 3 file(s) changed, +3 -1");
  const j = await p.json(["task", "show", "fix"]);
  expect(j.branch).toBe("lazy/fix");
  expect(j.base).toBe(base);
  expect(j.diffstat).toEqual({ files: 3, added: 3, removed: 1 });
  expect(j.summary).toBeNull();
});

test("a task with no branch yet says so; an unknown task is refused", async () => {
  await p.ok(["task", "add", "not started", "--code", "fresh"]);
  const r = await p.ok(["diff", "fresh"]);
  expect(r.stdout).toContain("No branch lazy/fresh: the task has not started, or it was rejected.");
  const show = await p.ok(["task", "show", "fresh"]);
  expect(show.stdout).toContain("Branch:  lazy/fresh (not made yet)");
  const bad = await p.run(["diff", "nope"]);
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toMatch(/nope/);
});

test("a branch that moves is read at its new tip: the daemon's counts ahead never show an older one", async () => {
  await p.ok(["diff", "fix", "--stat"]); // the daemon has read (and now watches) the task branches
  const tips: string[] = [];
  // Moves in a row, each read at once (the count ahead of a move may still be under way) and
  // once more: every reading names the tip it counted, and the counts are that tip's.
  for (const n of [1, 2, 3]) {
    sh(
      p.root,
      `git checkout -q lazy/fix && printf 'x\\n%.0s' $(seq 1 ${n * 5}) > more${n}.txt && git add . && git commit -qm more${n} && git checkout -q main`,
    );
    const tip = sh(p.root, "git rev-parse lazy/fix").out.trim();
    tips.push(tip);
    for (let read = 0; read < 2; read++) {
      const j = await p.json(["diff", "fix", "--stat"]);
      expect(j.tip).toBe(tip);
      expect(j.total.files).toBe(3 + n);
      expect(j.files.at(-1)).toMatchObject({ path: `more${n}.txt`, added: n * 5, removed: 0 });
    }
  }
  // The move by git's own update-ref (a person's), back to the first: counted as that tip again.
  sh(p.root, `git update-ref refs/heads/lazy/fix ${tips[0]}`);
  const back = await p.json(["diff", "fix", "--stat"]);
  expect(back.tip).toBe(tips[0]);
  expect(back.total).toEqual({ files: 4, added: 8, removed: 1 });
  const text = await p.ok(["diff", "fix", "--stat"]);
  expect(text.stdout).toContain(" 4 file(s) changed, +8 -1\n");
});
