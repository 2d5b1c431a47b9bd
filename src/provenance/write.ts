/**
 * Writing a turn's records: each commit the turn brought onto lazy/<task> (from its tip before
 * the turn to the tip after) gets one, as a git note (notes.ts). Only the agent's own commits: a
 * commit some other branch or tag of the project already holds (a person's, merged in by the
 * agent) is not the agent's work, and a merge commit's content is its parents' (no record).
 */
import { git } from "../git";
import { added, addedByMerge } from "./diff";
import { writeNote } from "./notes";
import { recordOf, type TurnFacts } from "./record";

/** Records one turn writes at most; later commits of a longer turn get none (said in the result). */
export const MAX_COMMITS = 500;

/** The agent's new commits between `from` and `to`, oldest first, each with its parents (none: a root commit). */
export function newCommits(root: string, from: string, to: string): { commit: string; parents: string[] }[] {
  const r = git(
    root,
    ["rev-list", "--reverse", "--parents", to, "--not", from, "--exclude=lazy/*", "--branches", "--tags", "--remotes", "--"],
    { allowFail: true, maxBytes: 4 * 1024 * 1024 },
  );
  if (r.code !== 0) return [];
  return r.out.split("\n").flatMap((l) => {
    const [commit, ...parents] = l.split(" ");
    return commit && /^[0-9a-f]{40,64}$/.test(commit) ? [{ commit, parents }] : [];
  });
}

/** Write the record of each new commit of the turn; the commits written, and what could not be. */
export function writeTurn(root: string, from: string, to: string, facts: TurnFacts): { written: string[]; skipped: string[] } {
  const commits = newCommits(root, from, to);
  const written: string[] = [];
  const skipped: string[] = [];
  if (commits.length > MAX_COMMITS) skipped.push(`${commits.length - MAX_COMMITS} commit(s) past the first ${MAX_COMMITS} of the turn`);
  for (const { commit, parents } of commits.slice(0, MAX_COMMITS)) {
    try {
      const changed = parents.length > 1 ? addedByMerge(root, commit) : added(root, commit, parents[0] ?? null);
      writeNote(root, commit, recordOf(commit, changed, facts));
      written.push(commit);
    } catch (e) {
      skipped.push(`${commit.slice(0, 12)}: ${(e as Error).message}`);
    }
  }
  return { written, skipped };
}
