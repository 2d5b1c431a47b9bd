/**
 * Where records live: one git note per commit under refs/notes/agent-trace in the project's
 * repository (`git notes --ref agent-trace show <commit>` prints it; `git push origin
 * refs/notes/agent-trace` shares them). Written by lazy on the host only (hardened git in the
 * project root, src/git); the agent's container has no way to the project's refs. Each note's
 * commit is lazy's (`lazy <lazy@localhost>`), not the person's: one notes commit per turn
 * (writeNotes), never one per record.
 */
import { AGENT_TRACE_NOTES, NOTE_MAX, notesOn } from "../git";
import { LazyError } from "../util/errors";
import type { TraceRecord } from "./record";
import { run } from "./run";

/** The notes ref (git's AGENT_TRACE_NOTES: lazy export reads the same). */
export const NOTES_REF = AGENT_TRACE_NOTES;
/** A record larger than this is not one lazy wrote: read no further (git's NOTE_MAX). */
export const MAX_NOTE = NOTE_MAX;

/** Tries of a notes commit when someone else moved the notes ref meanwhile (a person's git notes, another turn's records). */
const TRIES = 4;

/** The notes ref's commit now (null: there is none yet). */
export async function notesTip(root: string): Promise<string | null> {
  const r = await run(root, ["rev-parse", "--verify", "-q", `${NOTES_REF}^{commit}`], 4096);
  const tip = r.out.trim();
  return r.ok && /^[0-9a-f]{40,64}$/.test(tip) ? tip : null;
}

/**
 * Write (or replace) the notes of a turn's commits as ONE commit on the notes ref, in one
 * `git fast-import` (blobs and tree and commit; git keeps the notes tree's fan-out as it
 * should, so `git notes show` finds old and new alike). It starts from the ref's commit as it is
 * (every note already there — a person's, a teammate's — stays) and moves the ref only if it
 * still is that commit (fast-import refuses to drop the commit it did not start from); moved
 * meanwhile, it starts again from the new one, a few times. Throws with git's own last line.
 */
export async function writeNotes(
  root: string,
  notes: readonly { commit: string; text: string }[],
  message: string,
  /** The ref's commit, asked earlier (while the diffs were read): fast-import checks it still is. */
  tipFirst?: Promise<string | null>,
): Promise<void> {
  if (!notes.length) return;
  const ops: Buffer[] = [];
  for (const n of notes) {
    const bytes = Buffer.from(n.text);
    ops.push(Buffer.from(`N inline ${n.commit}\ndata ${bytes.length}\n`), bytes, Buffer.from("\n"));
  }
  await commitNotes(root, ops, message, `writing ${notes.length} trace record(s)`, tipFirst);
}

/**
 * Drop the notes of `commits` (full ids) under the notes ref, as one notes commit, only those
 * that have one (found by git's note reader, never by listing the ref); the others' stay. Made
 * as writeNotes makes its commit, so a note written meanwhile (another turn's, a person's) is
 * never undone: `git notes remove` moves the ref without checking it. How many were dropped.
 */
export async function dropNotes(root: string, commits: readonly string[]): Promise<number> {
  if (!commits.length) return 0;
  const noted = await notesOn(root, NOTES_REF, commits);
  const drop = commits.filter((c) => noted.has(c));
  if (!drop.length) return 0;
  // fast-import's null object as a note's content removes the note.
  const ops = drop.map((c) => Buffer.from(`N ${"0".repeat(c.length)} ${c}\n`));
  await commitNotes(
    root,
    ops,
    `lazy: the trace records of ${drop.length} commit(s) of a rejected task`,
    `dropping ${drop.length} trace record(s)`,
  );
  return drop.length;
}

/**
 * One notes commit of `ops` (fast-import's note commands) on the notes ref, in one `git
 * fast-import`: from the ref's commit as it is, moved only if it still is that commit (fast-import
 * refuses to drop a commit it did not start from); moved meanwhile, again from the new one.
 */
async function commitNotes(root: string, ops: readonly Buffer[], message: string, what: string, tipFirst?: Promise<string | null>) {
  const msg = Buffer.from(message);
  let why = "";
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const tip = await (attempt === 0 && tipFirst ? tipFirst : notesTip(root));
    const head = Buffer.from(
      `commit ${NOTES_REF}\ncommitter lazy <lazy@localhost> ${Math.floor(Date.now() / 1000)} +0000\ndata ${msg.length}\n`,
    );
    const from = Buffer.from(`\n${tip ? `from ${tip}\n` : ""}`);
    const input = Buffer.concat([head, msg, from, ...ops, Buffer.from("\ndone\n")]);
    const r = await run(root, ["fast-import", "--quiet", "--done"], 64 * 1024, { stdin: input });
    if (r.ok) return;
    why = r.why;
    // Someone moved the ref since tip was read: start again from theirs.
    if (!/not updating|lock/i.test(why)) break;
    await Bun.sleep(20 * (attempt + 1));
  }
  throw new LazyError("internal", `${what} under ${NOTES_REF} failed: ${why}`);
}

/**
 * The record noted on `commit` (a full commit id), parsed; null when it has none. What is there
 * is read as data (a teammate may have pushed it) through git's one note reader (`notesOn`:
 * bounded in bytes and time, without blocking the daemon's thread), and a note that is not a
 * record is refused with its cause.
 */
export async function readRecord(root: string, commit: string, opts: { timeoutMs?: number } = {}): Promise<TraceRecord | null> {
  const note = (await notesOn(root, NOTES_REF, [commit], opts)).get(commit);
  if (!note) return null;
  if (note.cut)
    throw new LazyError(
      "conflict",
      `The note on ${commit.slice(0, 12)} under ${NOTES_REF} is over ${MAX_NOTE} bytes: not a record lazy wrote; look at it with git notes --ref agent-trace show ${commit.slice(0, 12)}.`,
    );
  let v: unknown;
  try {
    v = JSON.parse(note.text);
  } catch {
    throw new LazyError(
      "conflict",
      `The note on ${commit.slice(0, 12)} under ${NOTES_REF} is not JSON, so not an Agent Trace record; look at it with git notes --ref agent-trace show ${commit.slice(0, 12)}.`,
    );
  }
  const rec = v as TraceRecord;
  if (!rec || typeof rec !== "object" || !Array.isArray(rec.files))
    throw new LazyError(
      "conflict",
      `The note on ${commit.slice(0, 12)} under ${NOTES_REF} is JSON but not an Agent Trace record (no files).`,
    );
  return rec;
}
