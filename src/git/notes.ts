/**
 * Reading git notes (the Agent Trace records under refs/notes/agent-trace): the one reader of a
 * note's text, for `lazy trace`, the dashboard's hover and `lazy export`. The notes of the given
 * commits are read directly, never by listing the notes ref (which a teammate's push can make
 * of any size): one `git cat-file --batch-check` finds each commit's note where git keeps it
 * (the commit's id as a path, split by git's fan-out: `ab/cdef…`, `ab/cd/ef…`), one
 * `git cat-file --batch` reads them. Host-side hardened git in the project root, bounded in
 * bytes and in time, without blocking the daemon's thread.
 */
import { LazyError } from "../util/errors";
import { gitBounded } from "./run";

/** Where lazy keeps an Agent Trace record per agent commit. */
export const AGENT_TRACE_NOTES = "refs/notes/agent-trace";

/** A note is read up to this many bytes; past it, it is marked cut. */
export const NOTE_MAX = 4 * 1024 * 1024;
/** All the notes of one read, at most; notes past it are marked cut, with no text. */
const ALL_MAX = 64 * 1024 * 1024;
/** How long one read's git may take, unless the caller says. */
const TIME_MS = 60_000;

const ID = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
const REF = /^refs\/notes\/[A-Za-z0-9][A-Za-z0-9._/-]*$/;

export interface Note {
  text: string;
  /** The note is longer than NOTE_MAX (text: its first NOTE_MAX bytes), or past the read's budget (text: empty). */
  cut: boolean;
}

/** The paths a note of `id` can have in a notes tree: git's fan-outs, none to three levels. */
const pathsOf = (id: string) => [
  id,
  `${id.slice(0, 2)}/${id.slice(2)}`,
  `${id.slice(0, 2)}/${id.slice(2, 4)}/${id.slice(4)}`,
  `${id.slice(0, 2)}/${id.slice(2, 4)}/${id.slice(4, 6)}/${id.slice(6)}`,
];

/**
 * The notes on `commits` (full ids) under `ref`: commit → its note's text (a commit without one
 * is absent). `timeoutMs` bounds each git run; past it the read is refused with its cause.
 */
export async function notesOn(
  root: string,
  ref: string,
  commits: readonly string[],
  opts: { timeoutMs?: number } = {},
): Promise<Map<string, Note>> {
  const out = new Map<string, Note>();
  if (!REF.test(ref)) throw new LazyError("internal", `${ref} is not a notes ref lazy reads.`);
  const ids = [...new Set(commits)].filter((c) => ID.test(c));
  if (!ids.length) return out;
  const timeoutMs = opts.timeoutMs ?? TIME_MS;
  const run = async (args: string[], stdin: string, maxBytes: number) => {
    const r = await gitBounded(root, args, { stdin, maxBytes, timeoutMs });
    if (r.late)
      throw new LazyError(
        "conflict",
        `Reading the notes under ${ref} took over ${Math.round(timeoutMs / 1000)} s, so git was stopped; the repository may be busy or very large: try again, or look with git notes --ref ${ref.replace(/^refs\/notes\//, "")} show COMMIT.`,
      );
    if (r.code !== 0 && !r.cut)
      throw new LazyError(
        "internal",
        `git cat-file reading the notes under ${ref} failed: ${r.err.trim().split("\n").at(-1) ?? "no reason given"}`,
      );
    return r;
  };

  // Where each commit's note is: the first of its fan-out paths that names a blob.
  const asked = ids.flatMap((id) => pathsOf(id).map((path) => ({ id, path })));
  const check = await run(
    ["cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
    asked.map((a) => `${ref}:${a.path}\n`).join(""),
    asked.length * 256,
  );
  const found = new Map<string, { blob: string; size: number }>();
  check.out
    .toString("utf8")
    .split("\n")
    .forEach((line, i) => {
      const a = asked[i];
      const m = /^([0-9a-f]{40,64}) blob (\d+)$/.exec(line);
      if (a && m && !found.has(a.id)) found.set(a.id, { blob: m[1]!, size: Number(m[2]) });
    });

  // Their text: the ones within bounds in one cat-file --batch, a longer one's first NOTE_MAX bytes alone.
  let budget = ALL_MAX;
  const whole = new Map<string, number>();
  const long = new Set<string>();
  for (const { blob, size } of found.values()) {
    if (whole.has(blob) || long.has(blob)) continue;
    const take = Math.min(size, NOTE_MAX);
    if (take > budget) continue;
    budget -= take;
    if (size > NOTE_MAX) long.add(blob);
    else whole.set(blob, size);
  }
  const texts = new Map<string, Note>();
  if (whole.size) {
    const blobs = [...whole.keys()];
    const r = await run(
      ["cat-file", "--batch"],
      blobs.map((b) => `${b}\n`).join(""),
      blobs.reduce((n, b) => n + whole.get(b)! + 128, 0),
    );
    let at = 0;
    for (const blob of blobs) {
      const eol = r.out.indexOf(10, at);
      const head = /^([0-9a-f]{40,64}) blob (\d+)$/.exec(r.out.toString("utf8", at, eol < 0 ? at : eol));
      if (eol < 0 || !head || head[1] !== blob) break; // an answer that does not pair with what was asked (a blob gone meanwhile): the rest is marked cut
      const size = Number(head[2]);
      texts.set(blob, { text: r.out.toString("utf8", eol + 1, eol + 1 + size), cut: false });
      at = eol + 1 + size + 1;
    }
  }
  for (const blob of long) {
    const r = await run(["cat-file", "blob", blob], "", NOTE_MAX);
    texts.set(blob, { text: r.out.toString("utf8"), cut: true });
  }
  for (const [id, { blob }] of found) out.set(id, texts.get(blob) ?? { text: "", cut: true });
  return out;
}
