/**
 * A task's diff for the dashboard: its branch (lazy/<ref>) against where it forked from the
 * project's current branch — what Accept would merge; once accepted, what its merge commit
 * brought in (the merge against its first parent). Host-side git in the project root only,
 * through git/index.ts's hardened runner (never in the agent-written worktree), with external
 * diff drivers and textconv off (a .gitattributes the agent committed must run nothing), and
 * bounded: files changed first, then hunks until the output limit, the rest marked cut.
 */
import * as Git from "../git";
import { watchBranches } from "./ahead";

export interface DiffFile {
  path: string;
  added: number | null;
  removed: number | null;
  binary: boolean;
  hunks: { header: string; lines: string[] }[];
}

export interface Diff {
  branch: string;
  base: string | null;
  tip: string | null;
  files: DiffFile[];
  /** Every file changed, counted past the listing's limit (binary files add no lines). */
  total: { files: number; added: number; removed: number };
  /** The patch passed the size limit: later files show their counts, not their hunks. */
  cut: boolean;
  note: string | null;
}

export const MAX_PATCH_BYTES = 2_000_000;
const MAX_FILES = 2_000;
/** Without hunks a file is a line: lazy diff --stat lists this many. */
const MAX_STAT_FILES = 20_000;
/** How lazy reads a task's diff on the host: as git prints it, no driver or filter of the project's, no rename guesses, from the root. */
export const FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-relative"];

/** A diff with no files: `note` says why. */
const emptyDiff = (branch: string, note: string, base: string | null, tip: string | null): Diff => ({
  branch,
  base,
  tip,
  files: [],
  total: { files: 0, added: 0, removed: 0 },
  cut: false,
  note,
});

/** `stat`: the files and their counts only (lazy diff --stat, task show): no patch is read. */
export async function taskDiff(root: string, ref: string, merged?: string, opts: { stat?: boolean } = {}): Promise<Diff> {
  const branch = `${Git.BRANCH_PREFIX}${ref}`;
  const empty = (note: string, base: string | null = null, tip: string | null = null) => emptyDiff(branch, note, base, tip);
  if (merged) {
    const m = Git.git(root, ["rev-parse", `${merged}^{commit}`, `${merged}^1^{commit}`], { allowFail: true });
    const [tip, base] = m.out.trim().split("\n");
    if (m.code !== 0 || !tip || !base) return empty(`The merge commit ${merged.slice(0, 12)} is no longer in the project's history.`);
    return patchOf(root, branch, base, tip, `Merged as ${tip.slice(0, 12)}: what the merge brought in.`, opts.stat);
  }
  watchBranches(root, (moved) => {
    ahead = ahead.then(() => countBranch(root, moved)).catch(() => {}); // one at a time: the machine is the agents' too
  });
  // The tip and the project's HEAD in one call (then the fork point, kept per pair like the counts).
  const ids = Git.git(root, ["rev-parse", `refs/heads/${branch}^{commit}`, "HEAD^{commit}"], { allowFail: true });
  const [tip, head] = ids.code === 0 ? ids.out.trim().split("\n") : [];
  if (!tip || !head) {
    const only = Git.git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], { allowFail: true });
    if (only.code !== 0) return empty(`No branch ${branch}: the task has not started, or it was rejected.`);
    return empty(`${branch} shares no history with the project's HEAD.`, null, only.out.trim());
  }
  await countPair(root, head, tip);
  const base = forkPoint(root, head, tip);
  if (!base) return empty(`${branch} shares no history with the project's HEAD.`, null, tip);
  if (base === tip) return empty(`${branch} has no commits the project's HEAD lacks (nothing to merge, or already merged).`, base, tip);
  return patchOf(root, branch, base, tip, null, opts.stat);
}

/**
 * The difference between two candidates' branches (best-of-N): `from`'s tip against `to`'s, the
 * files as each would be merged. `from` and `to` are task refs the caller took from the group's
 * own tasks, never a person's text: only refs/heads/lazy/<ref> is ever named to git.
 */
export function candidatesDiff(root: string, from: string, to: string): Diff {
  const a = `${Git.BRANCH_PREFIX}${from}`;
  const b = `${Git.BRANCH_PREFIX}${to}`;
  const label = `${a}..${b}`;
  const tipOf = (branch: string) =>
    Git.git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], { allowFail: true }).out.trim() || null;
  const [base, tip] = [tipOf(a), tipOf(b)];
  if (!base || !tip) {
    const missing = [!base ? a : null, !tip ? b : null].filter(Boolean).join(" and ");
    return emptyDiff(label, `No branch ${missing}: that candidate has not started, or it was rejected.`, base, tip);
  }
  if (base === tip) return emptyDiff(label, `${a} and ${b} are the same commit.`, base, tip);
  return patchOf(root, label, base, tip, null);
}

/**
 * A pair not seen before: the fork point and the counts at once (`head...tip` counts from the
 * fork point), so a first reading waits for the slower of the two, not both. Readers at once
 * (the branch's move counted ahead, lazy diff, the page) share the one under way.
 */
function countPair(root: string, head: string, tip: string): Promise<void> {
  const key = `${root}\0${head}\0${tip}`;
  if (forks.has(key)) return Promise.resolve();
  let under = counting.get(key);
  if (!under) {
    under = (async () => {
      const [fork, counts] = await Promise.all([
        Git.gitRead(root, ["merge-base", head, tip]),
        Git.gitRead(root, ["diff", ...FLAGS, "--numstat", "-z", `${head}...${tip}`], COUNT_MAX_BYTES),
      ]);
      const found = fork?.trim();
      if (found && /^[0-9a-f]{40,64}$/.test(found)) {
        remember(forks, key, found);
        if (counts !== null && found !== tip)
          remember(counted, `${root}\0${found}\0${tip}`, { out: counts, cut: counts.length >= COUNT_MAX_BYTES });
      }
    })().finally(() => counting.delete(key));
    counting.set(key, under);
  }
  return under;
}
const counting = new Map<string, Promise<void>>();
let ahead: Promise<void> = Promise.resolve();

/**
 * Count a task branch that just moved (a turn ended, or the person moved it), before anyone
 * asks: the person's first lazy diff or page after a turn finds its counts ready. Off the
 * daemon's thread (gitRead); a failure only means the reading counts when asked.
 */
async function countBranch(root: string, ref: string): Promise<void> {
  const ids = await Git.gitRead(root, ["rev-parse", `refs/heads/${Git.BRANCH_PREFIX}${ref}^{commit}`, "HEAD^{commit}"]);
  const [tip, head] = ids?.trim().split("\n") ?? [];
  // A branch just made from HEAD (a launch's worktree) has nothing to count.
  if (tip && head && tip !== head && /^[0-9a-f]{40,64}$/.test(tip) && /^[0-9a-f]{40,64}$/.test(head)) await countPair(root, head, tip);
}

/**
 * The counts between two commits, kept for the last few pairs: commit ids name immutable trees,
 * so the same pair always has the same counts, and a person reads one diff several times (task
 * show, diff --stat, the page). A 5,000-file change costs git ~20 ms to count; this costs nothing.
 */
const counted = new Map<string, { out: string; cut?: boolean }>();
const COUNTED_MAX = 8;
const COUNTED_MAX_BYTES = 1_000_000;

const COUNT_MAX_BYTES = 4_000_000;

/** Keep `value` under `key`, the oldest going past COUNTED_MAX; large counts are not kept. */
function remember<T>(map: Map<string, T>, key: string, value: T): void {
  if (typeof value === "object" && value && "out" in value && (value as { out: string }).out.length > COUNTED_MAX_BYTES) return;
  if (map.size >= COUNTED_MAX) map.delete(map.keys().next().value!);
  map.set(key, value);
}

function numstat(root: string, base: string, tip: string): { out: string; cut?: boolean } {
  const key = `${root}\0${base}\0${tip}`;
  const hit = counted.get(key);
  if (hit) return hit;
  const r = Git.git(root, ["diff", ...FLAGS, "--numstat", "-z", base, tip], { maxBytes: COUNT_MAX_BYTES });
  const got = { out: r.out, cut: r.cut };
  remember(counted, key, got);
  return got;
}

const forks = new Map<string, string>();

/** Where `tip` forked from `head` (git merge-base), kept for the last few pairs; null when none. */
function forkPoint(root: string, head: string, tip: string): string | null {
  const key = `${root}\0${head}\0${tip}`;
  const hit = forks.get(key);
  if (hit) return hit;
  const r = Git.git(root, ["merge-base", head, tip], { allowFail: true });
  if (r.code !== 0) return null;
  remember(forks, key, r.out.trim());
  return r.out.trim();
}

/** The files and hunks between two commits, bounded. */
function patchOf(root: string, branch: string, base: string, tip: string, note: string | null, statOnly = false): Diff {
  const stat = numstat(root, base, tip);
  const files: DiffFile[] = [];
  const total = { files: 0, added: 0, removed: 0 };
  for (const rec of stat.out.split("\0")) {
    const m = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(rec.replace(/^\n/, ""));
    if (!m) continue;
    const binary = m[1] === "-";
    total.files++;
    if (!binary) {
      total.added += Number(m[1]);
      total.removed += Number(m[2]);
    }
    if (files.length >= (statOnly ? MAX_STAT_FILES : MAX_FILES)) continue;
    files.push({ path: m[3]!, added: binary ? null : Number(m[1]), removed: binary ? null : Number(m[2]), binary, hunks: [] });
  }
  if (statOnly) return { branch, base, tip, files, total, cut: total.files > files.length || !!stat.cut, note };
  const patch = Git.git(root, ["diff", ...FLAGS, "-U3", base, tip], { maxBytes: MAX_PATCH_BYTES });
  // One section a file, in numstat's order; a section cut short by the limit is dropped whole.
  const sections = patch.out.split(/^diff --git /m).slice(1);
  if (patch.cut) sections.pop();
  sections.forEach((sec, i) => {
    const f = files[i];
    if (!f) return;
    let hunk: DiffFile["hunks"][number] | null = null;
    for (const l of sec.split("\n")) {
      if (l.startsWith("@@")) {
        hunk = { header: l, lines: [] };
        f.hunks.push(hunk);
      } else if (hunk && (l[0] === " " || l[0] === "+" || l[0] === "-" || l[0] === "\\")) hunk.lines.push(l);
    }
  });
  return { branch, base, tip, files, total, cut: !!patch.cut || !!stat.cut || total.files > files.length, note };
}
