/**
 * Writing a turn's records: each commit the turn brought onto lazy/<task> (from its tip before
 * the turn to the tip after) gets one, as a git note (notes.ts). Only the agent's own commits: a
 * commit some other branch or tag of the project already holds (a person's, merged in by the
 * agent) is not the agent's work, and a merge commit's content is its parents' (no record).
 *
 * It runs on the daemon's thread, so it never blocks it: every git runs without waiting on it
 * (run.ts), and a turn's writing has bounds — commits (MAX_COMMITS), patch bytes read
 * (TURN_BYTES), time (TURN_MS), the matching's work (record.ts MATCH_WORK), each note's size
 * (MAX_NOTE) — past which what is left gets no record and the result says so. The turn's
 * commits are asked of git first: a turn that made none costs one git run and nothing else.
 * All its notes go in one notes commit.
 */
import { type Added, added, addedByMerge } from "./diff";
import { MAX_NOTE, notesTip, writeNotes } from "./notes";
import { fitNote, indexTurn, recordOf, type TurnFacts } from "./record";
import { run } from "./run";

/** Records one turn writes at most; later commits of a longer turn get none (said in the result). */
export const MAX_COMMITS = 500;
/** Patch bytes one turn's records read at most (all its commits' diffs together). */
export const TURN_BYTES = 64 * 1024 * 1024;
/** Time one turn's records take at most (reading the diffs, making the records), from their start. */
export const TURN_MS = 60_000;

export interface WriteLimits {
  commits: number;
  bytes: number;
  ms: number;
  note: number;
}
export const LIMITS: WriteLimits = { commits: MAX_COMMITS, bytes: TURN_BYTES, ms: TURN_MS, note: MAX_NOTE };

/** The agent's new commits between `from` and `to`, oldest first, each with its parents (none: a root commit). */
export async function newCommits(root: string, branch: string, from: string, to: string): Promise<{ commit: string; parents: string[] }[]> {
  if (from === to) return [];
  // Every ref but the task's own branch holds commits that are not its turn's: a person's, and
  // another task's (an agent can read every object and merge another task's commits: they
  // keep that task's records, never get this one's).
  const own = branch.replace(/^refs\/heads\//, "").replace(/[*?[\\]/g, "\\$&");
  const r = await run(
    root,
    ["rev-list", "--reverse", "--parents", to, "--not", from, `--exclude=${own}`, "--branches", "--tags", "--remotes", "--"],
    4 * 1024 * 1024,
  );
  if (!r.ok && !r.cut) return [];
  return r.out.split("\n").flatMap((l) => {
    const [commit, ...parents] = l.split(" ");
    return commit && /^[0-9a-f]{40,64}$/.test(commit) && (!r.cut || parents.every((p) => /^[0-9a-f]{40,64}$/.test(p)))
      ? [{ commit, parents }]
      : [];
  });
}

export interface Written {
  /** The commits whose record was written. */
  written: string[];
  /** What got no record, or a cut one, and why (one line each). */
  skipped: string[];
  /** The turn's new commits (before the bounds). */
  commits: number;
}

/**
 * Write the record of each new commit of the turn; the commits written, and what could not be.
 * `facts`: the turn's, or how to get them — asked only once the turn is known to have commits.
 */
export async function writeTurn(
  root: string,
  branch: string,
  from: string,
  to: string,
  facts: TurnFacts | (() => TurnFacts | Promise<TurnFacts>),
  limits: WriteLimits = LIMITS,
): Promise<Written> {
  const commits = await newCommits(root, branch, from, to);
  const written: string[] = [];
  const skipped: string[] = [];
  if (!commits.length) return { written, skipped, commits: 0 };
  const f = typeof facts === "function" ? await facts() : facts;
  const began = performance.now();
  // The notes ref's commit, asked alongside the diffs (fast-import checks it has not moved since).
  const tip = notesTip(root);
  if (commits.length > limits.commits)
    skipped.push(`${commits.length - limits.commits} commit(s) past the first ${limits.commits} of the turn`);
  // 1. Each commit's diff, within the turn's bytes and time.
  const read: { commit: string; changed: Added }[] = [];
  let bytes = 0;
  const mine = commits.slice(0, limits.commits);
  for (const [i, { commit, parents }] of mine.entries()) {
    const left = limits.bytes - bytes;
    const late = performance.now() - began > limits.ms;
    if (left <= 0 || late) {
      skipped.push(
        `${mine.length - i} commit(s) from ${commit.slice(0, 12)} on: the turn's ${late ? `time for its records (${limits.ms / 1000} s)` : `patch budget (${limits.bytes} bytes)`} was spent`,
      );
      break;
    }
    try {
      // Each git run within what is left of the turn's time.
      const ms = limits.ms - (performance.now() - began);
      const changed =
        parents.length > 1 ? await addedByMerge(root, commit, left, ms) : await added(root, commit, parents[0] ?? null, left, ms);
      bytes += changed.bytes;
      read.push({ commit, changed });
    } catch (e) {
      skipped.push(`${commit.slice(0, 12)}: ${(e as Error).message}`);
    }
  }
  // 2. The turn's index, once: served models, and which writing tool call names each path.
  const index = indexTurn(
    f,
    read.flatMap((r) => r.changed.files.map((c) => c.path)),
  );
  // 3. The records, each within what a reader accepts.
  const notes: { commit: string; text: string }[] = [];
  const now = new Date();
  let noteBytes = 0;
  let slice = performance.now();
  for (const [i, { commit, changed }] of read.entries()) {
    // The notes of a turn together stay within its patch budget (each is at most a reader's 4 MiB).
    if (noteBytes >= limits.bytes) {
      skipped.push(`${read.length - i} commit(s) from ${commit.slice(0, 12)} on: the turn's records reached ${limits.bytes} bytes`);
      break;
    }
    const fit = fitNote(recordOf(commit, changed, f, now, index), limits.note);
    if ("skipped" in fit) {
      skipped.push(`${commit.slice(0, 12)}: ${fit.skipped}`);
      continue;
    }
    if (fit.trimmed.length)
      skipped.push(`${commit.slice(0, 12)}: its record was cut to fit ${limits.note} bytes (${fit.trimmed.join("; ")})`);
    notes.push({ commit, text: fit.text });
    noteBytes += fit.text.length;
    // Let the daemon answer between records, every ~20 ms of making them (one can take 100 ms).
    if (performance.now() - slice > 20) {
      await Bun.sleep(0);
      slice = performance.now();
    }
  }
  if (index.work.left <= 0) skipped.push("the turn's tool calls were too many to match them all: the rest of its ranges are the turn's");
  // 4. One notes commit for the turn.
  try {
    await writeNotes(
      root,
      notes,
      `lazy: trace records of task ${f.task.code ?? f.task.id}, turn ${f.turn} (${notes.length} commit(s))\n`,
      tip,
    );
    written.push(...notes.map((n) => n.commit));
  } catch (e) {
    skipped.push((e as Error).message);
  }
  return { written, skipped, commits: commits.length };
}

/**
 * The commits only `branch` (a task's, refs/heads/…) holds: none of the project's other
 * branches, tags or remote branches, nor HEAD, has them. Their records are dropped with it.
 */
export async function branchOnly(root: string, branch: string): Promise<string[]> {
  const name = branch.replace(/^refs\/heads\//, "");
  const r = await run(
    root,
    ["rev-list", `refs/heads/${name}`, "--not", `--exclude=${name}`, "--branches", "--tags", "--remotes", "HEAD", "--"],
    64 * 1024 * 1024,
  );
  if (!r.ok) return [];
  return r.out.split("\n").filter((l) => /^[0-9a-f]{40,64}$/.test(l));
}
