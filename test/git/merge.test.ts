/**
 * What stands in accept's way, said before anything is merged (git/index.ts mergeBlockers and
 * blockerMessage), and git merge's own refusal worded the same way when the checkout changed
 * in between (Git.merge): on real repositories in temp folders, no daemon.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as Git from "../../src/git";
import { sh } from "../helpers/lazy";

/** A repository whose main has a.txt and b.txt, and a branch lazy/t that changes a.txt and adds new.txt. */
function repo(): string {
  const root = mkdtempSync(join(tmpdir(), "lazy-merge-"));
  const run = (cmd: string) => {
    const r = sh(root, cmd);
    if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  };
  run("git init -q -b main && git config user.email d@e && git config user.name D");
  writeFileSync(join(root, "a.txt"), "one\n");
  writeFileSync(join(root, "b.txt"), "b\n");
  run("git add -A && git commit -qm init && git checkout -qb lazy/t");
  writeFileSync(join(root, "a.txt"), "agent\n");
  writeFileSync(join(root, "new.txt"), "new\n");
  run("git add -A && git commit -qm agent && git checkout -q main");
  return root;
}

describe("accept's merge, explained", () => {
  test("a clean checkout and no conflict: nothing in the way", () => {
    const root = repo();
    expect(Git.mergeBlockers(root, "lazy/t")).toEqual({ dirty: [], conflicts: [] });
    // A change to a file the branch does not touch is not in the way (git merges around it).
    writeFileSync(join(root, "b.txt"), "mine\n");
    expect(Git.mergeBlockers(root, "lazy/t").dirty).toEqual([]);
  });

  test("uncommitted changes the merge would write, anything staged, an untracked file the branch adds: commit or stash", () => {
    const root = repo();
    writeFileSync(join(root, "a.txt"), "mine\n");
    const b = Git.mergeBlockers(root, "lazy/t");
    expect(b.dirty).toEqual(["a.txt"]);
    const msg = Git.blockerMessage("t", "lazy/t", b)!;
    expect(msg).toContain("changes not committed in files the merge of lazy/t would write: a.txt");
    expect(msg).toContain("Commit or stash them (git stash -u), then lazy accept t again");
    sh(root, "git checkout -q a.txt && echo staged > b.txt && git add b.txt");
    expect(Git.mergeBlockers(root, "lazy/t").dirty).toEqual(["b.txt"]);
    sh(root, "git reset -q && git checkout -q b.txt && echo mine > new.txt");
    expect(Git.mergeBlockers(root, "lazy/t").dirty).toEqual(["new.txt"]);
  });

  test("a conflict names its files and both ways out", () => {
    const root = repo();
    writeFileSync(join(root, "a.txt"), "person\n");
    sh(root, "git commit -qam person");
    const b = Git.mergeBlockers(root, "lazy/t");
    expect(b).toEqual({ dirty: [], conflicts: ["a.txt"] });
    const msg = Git.blockerMessage("t", "lazy/t", b)!;
    expect(msg).toContain("lazy/t conflicts with the project's branch in a.txt; nothing was merged");
    expect(msg).toContain('lazy send t "merge the project\'s current branch into yours and resolve the conflicts in a.txt"');
    expect(msg).toContain("git merge lazy/t, fix those files, git add them, git commit, then lazy close t");
  });

  test("git merge's own refusal (the checkout changed after the check) is worded the same, and leaves no merge under way", () => {
    const root = repo();
    writeFileSync(join(root, "a.txt"), "mine\n");
    expect(() => Git.merge(root, "lazy/t", "m", "t")).toThrow(/merge of lazy\/t would write: a\.txt\. Commit or stash them/);
    sh(root, "git checkout -q a.txt");
    writeFileSync(join(root, "a.txt"), "person\n");
    sh(root, "git commit -qam person");
    expect(() => Git.merge(root, "lazy/t", "m", "t")).toThrow(/lazy\/t conflicts with the project's branch in a\.txt/);
    expect(sh(root, "git status --porcelain").out.trim()).toBe("");
    expect(sh(root, "git rev-parse -q --verify MERGE_HEAD").code).not.toBe(0);
  });
});
