/**
 * Attacks on reading a task's work (issue 30): the agent's branch is hostile input. Its commits
 * land on lazy/<ref> (made here with host git, as the import after a turn would leave them), and
 * `lazy diff` / `lazy task show` read them with host-side git in the project root:
 * - a `.gitattributes` naming a diff driver, textconv or filter that the person's own git config
 *   defines (as many do: image diffs, git-crypt, LFS) must run nothing on the host;
 * - file names and lines with ANSI escapes and control bytes must be shown, not obeyed.
 * Before issue 30 there was no `lazy diff` and task show read no diff (both tests fail there).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project, sh } from "../helpers/lazy";

let p: Project;
let marks: string;

beforeAll(async () => {
  p = new Project({ toml: "" });
  marks = join(p.home, "marks");
  sh(
    p.root,
    `mkdir -p ${marks} && git config user.email dev@example.com && git config user.name Dev && printf 'x\\n' > a.txt && printf 'lazy.toml\\n' > .gitignore && git add . && git commit -qm init`,
  );
  await p.ok(["task", "add", "do things", "--code", "evil"]);
});

afterAll(cleanupAll);

test("a .gitattributes diff driver, textconv or filter the user's git defines runs nothing at lazy diff or task show", async () => {
  // The agent's branch names a driver and a filter for every file; git reads attributes from the
  // checkout, so the project's branch has them too (an earlier task's accepted change: accept
  // does not count .gitattributes as config).
  sh(
    p.root,
    `git checkout -qb lazy/evil && printf '* diff=evil filter=evil merge=evil\\n' > .gitattributes && printf 'x\\nchanged\\n' > a.txt && printf 'b\\n' > b.txt && git add . && git commit -qm evil && git checkout -q main && git checkout lazy/evil -- .gitattributes && git commit -qm "an earlier task's .gitattributes"`,
  );
  // What the person's own git config holds (global or the repository's): each would run a command.
  for (const [k, v] of <[string, string][]>[
    ["diff.evil.command", `touch ${marks}/diff-command`],
    ["diff.evil.textconv", `sh -c 'touch ${marks}/textconv; cat "$0"'`],
    ["diff.external", `touch ${marks}/external`],
    ["filter.evil.clean", `sh -c 'touch ${marks}/clean; cat'`],
    ["filter.evil.smudge", `sh -c 'touch ${marks}/smudge; cat'`],
    ["filter.evil.process", `touch ${marks}/process`],
  ])
    sh(p.root, `git config ${k} "${v.replace(/"/g, '\\"')}"`);
  expect(sh(p.root, "git rev-list --count main..lazy/evil").out.trim()).toBe("1");
  // The setup above must not have tripped a mark itself.
  sh(marks, "rm -f *");
  const d = await p.ok(["diff", "evil"]);
  expect(d.stdout).toContain("+changed");
  const s = await p.ok(["diff", "evil", "--stat"]);
  expect(s.stdout).toContain("3 file(s) changed");
  await p.ok(["diff", "evil", "--json"]);
  const show = await p.ok(["task", "show", "evil"]);
  expect(show.stdout).toContain("Branch:  lazy/evil");
  // And the dashboard's reading of the same diff.
  const api = await p.api("GET", "/api/tasks/evil/diff");
  expect(api.files.length).toBe(3);
  expect(readdirSync(marks)).toEqual([]);
  expect(existsSync(join(marks, "textconv"))).toBe(false);
});

test("file names and lines carrying ANSI escapes and control bytes are shown escaped, never obeyed", async () => {
  const esc = "\x1b]0;pwned\x07\x1b[2J";
  const name = `x${esc}\x9b31m.txt`;
  // A project of its own (the one above has the driver's config). Host git writes the agent's
  // names as they are (a hostile name is just bytes in a tree).
  const p = new Project({ toml: "" });
  sh(
    p.root,
    "git config user.email dev@example.com && git config user.name Dev && echo x > a.txt && git add . && git commit -qm init && git checkout -qb lazy/esc main",
  );
  await Bun.write(join(p.root, name), `line\x1b[8mhidden\x1b[0m\n`);
  sh(p.root, "git add -A . && git commit -qm esc && git checkout -q main");
  expect(sh(p.root, "git rev-list --count main..lazy/esc").out.trim()).toBe("1");
  await p.ok(["task", "add", "escapes", "--code", "esc"]);
  for (const args of [
    ["diff", "esc"],
    ["diff", "esc", "--stat"],
    ["task", "show", "esc"],
  ]) {
    const r = await p.ok(args);
    // No escape byte reaches the terminal, nor a C1 CSI, nor BEL.
    for (const c of ["\x07", "\x1b", "\x9b"]) expect(r.stdout).not.toContain(c);
    expect(r.stdout).toContain("x\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m.txt");
  }
  const d = await p.ok(["diff", "esc"]);
  expect(d.stdout).toContain("+line\\x1b[8mhidden\\x1b[0m");
  // --json keeps the agent's bytes as data (JSON escapes them; DEL and C1 need visible() only on a terminal).
  const j = await p.json(["diff", "esc"]);
  expect(j.files.map((f: any) => f.path)).toContain(name);
});
