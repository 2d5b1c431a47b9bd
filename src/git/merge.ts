/**
 * Bringing a task's branch home: what it would merge (commits, diffstat, files), what stands in
 * the merge's way (a dirty checkout, conflicts) in words a person can act on, and the merge.
 */
import { LazyError } from "../util/errors";
import { git } from "./run";

/** The task's commits not yet on the project's branch, one line each. */
export function commitsToMerge(root: string, branch: string): string[] {
  const r = git(root, ["log", "--format=%h %s", `HEAD..refs/heads/${branch}`]);
  return r.out.trim() ? r.out.trim().split("\n") : [];
}

/** What the branch changes against the project's current branch, as `git diff --stat` puts it. */
export function diffStat(root: string, branch: string): string {
  return git(root, ["diff", "--stat", `HEAD...refs/heads/${branch}`], { allowFail: true }).out.trim();
}

/** The files the branch changes against the project's current branch (from where they forked). */
export function changedFiles(root: string, branch: string): string[] {
  // -z: names as they are (no quoting of unusual bytes that would hide a "lazy.toml" at the end).
  const r = git(root, ["diff", "--name-only", "-z", "--no-renames", `HEAD...refs/heads/${branch}`], { allowFail: true });
  return r.out.split("\0").filter(Boolean);
}

/**
 * What stands in the way of merging `branch` into the checkout, found before anything is
 * touched: files of the checkout with changes not committed that the merge would write (or
 * anything staged: git merge refuses a dirty index), untracked files the branch would add, and
 * files the two sides both changed (git merge-tree; skipped by a git older than 2.38).
 */
export function mergeBlockers(root: string, branch: string): { dirty: string[]; conflicts: string[] } {
  const changed = new Set(changedFiles(root, branch));
  const dirty: string[] = [];
  // -z: names as they are; "XY name" entries, a rename's second name after it.
  const st = git(root, ["status", "--porcelain=v1", "-z", "--untracked-files=all"], { allowFail: true }).out.split("\0");
  for (let i = 0; i < st.length; i++) {
    const e = st[i]!;
    if (e.length < 4) continue;
    const x = e[0]!;
    const name = e.slice(3);
    if (x === "R" || x === "C") i++;
    if (x === "?" ? changed.has(name) : x !== " " || changed.has(name)) dirty.push(name);
  }
  if (dirty.length) return { dirty, conflicts: [] };
  const mt = git(root, ["merge-tree", "--write-tree", "--name-only", "--no-messages", "HEAD", `refs/heads/${branch}`], { allowFail: true });
  return { dirty, conflicts: mt.code === 1 ? mt.out.split("\n").slice(1).filter(Boolean) : [] };
}

/** What to tell a person whose checkout is in the merge's way, or whose branch conflicts with the task's. */
export function blockerMessage(ref: string, branch: string, b: { dirty: string[]; conflicts: string[] }): string | null {
  const list = (xs: string[]) => (xs.length > 10 ? `${xs.slice(0, 10).join(", ")} and ${xs.length - 10} more` : xs.join(", "));
  if (b.dirty.length)
    return `The project's checkout has changes not committed in files the merge of ${branch} would write: ${list(b.dirty)}. Commit or stash them (git stash -u), then lazy accept ${ref} again; nothing was merged.`;
  if (b.conflicts.length)
    return `${branch} conflicts with the project's branch in ${list(b.conflicts)}; nothing was merged. Either have the agent resolve it: lazy send ${ref} "merge the project's current branch into yours and resolve the conflicts in ${list(b.conflicts)}", then accept again; or merge by hand: git merge ${branch}, fix those files, git add them, git commit, then lazy close ${ref}.`;
  return null;
}

/** Merge the task's branch into the project's current branch (never a fast-forward that hides it). */
export function merge(root: string, branch: string, message: string, ref = branch): void {
  // --no-log: a person's merge.log would append the branch's commit subjects (the agent's words)
  // after the message, under lazy's trailers, which git then no longer reads as the last paragraph.
  const r = git(root, ["merge", "--no-ff", "--no-log", "-m", message, `refs/heads/${branch}`], { allowFail: true });
  if (r.code !== 0) {
    const conflicts = git(root, ["diff", "--name-only", "--diff-filter=U"], { allowFail: true }).out.split("\n").filter(Boolean);
    git(root, ["merge", "--abort"], { allowFail: true });
    // git names the files in its way on tab-indented lines after "would be overwritten by merge:".
    const text = `${r.err}\n${r.out}`;
    const dirty = /would be overwritten by merge/.test(text)
      ? [...text.matchAll(/^\t(.+)$/gm)].map((m) => m[1]!.trim()).filter(Boolean)
      : [];
    const said = blockerMessage(ref, branch, { dirty: dirty.length ? dirty : [], conflicts });
    throw new LazyError(
      "conflict",
      said ??
        `Merging ${branch} into the project failed (${(r.err || r.out).trim().split("\n").at(-1)}); nothing was changed. Merge it by hand: git merge ${branch}.`,
    );
  }
}
