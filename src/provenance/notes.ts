/**
 * Where records live: one git note per commit under refs/notes/agent-trace in the project's
 * repository (`git notes --ref agent-trace show <commit>` prints it; `git push origin
 * refs/notes/agent-trace` shares them). Written by lazy on the host only (hardened git in the
 * project root, src/git); the agent's container has no way to the project's refs. Each note's
 * commit is lazy's (`lazy <lazy@localhost>`), not the person's.
 */
import { AGENT_TRACE_NOTES, gitEnv, HARDENED, NOTE_MAX, notesOn } from "../git";
import { LazyError } from "../util/errors";
import type { TraceRecord } from "./record";

/** The notes ref (git's AGENT_TRACE_NOTES: lazy export reads the same). */
export const NOTES_REF = AGENT_TRACE_NOTES;
/** A record larger than this is not one lazy wrote: read no further (git's NOTE_MAX). */
export const MAX_NOTE = NOTE_MAX;

const IDENTITY = ["-c", "user.name=lazy", "-c", "user.email=lazy@localhost"];

/** Write (or replace) the note of `commit`. Throws with git's own last line when git refuses. */
export function writeNote(root: string, commit: string, record: TraceRecord): void {
  const text = `${JSON.stringify(record, null, 2)}\n`;
  for (let attempt = 0; ; attempt++) {
    const r = Bun.spawnSync(["git", ...HARDENED, ...IDENTITY, "notes", "--ref", NOTES_REF, "add", "--force", "--file", "-", commit], {
      cwd: root,
      env: gitEnv(),
      stdin: Buffer.from(text),
      stdout: "pipe",
      stderr: "pipe",
    });
    if (r.exitCode === 0) return;
    const why = r.stderr.toString().trim().split("\n").at(-1) ?? `exit ${r.exitCode}`;
    // Another writer held the notes ref's lock for a moment (a person's git notes, a second turn ending).
    if (attempt < 2 && /lock/i.test(why)) {
      Bun.sleepSync(50);
      continue;
    }
    throw new LazyError("internal", `writing the trace record of ${commit.slice(0, 12)} under ${NOTES_REF} failed: ${why}`);
  }
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
