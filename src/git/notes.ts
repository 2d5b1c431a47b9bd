/**
 * Reading git notes (the Agent Trace records under refs/notes/agent-trace): which commits carry a
 * note on a notes ref, and each note's text, bounded. Host-side hardened git in the project root.
 */
import { git } from "./run";

/** Where lazy keeps an Agent Trace record per agent commit. */
export const AGENT_TRACE_NOTES = "refs/notes/agent-trace";

/** A note is read up to this many bytes; past it, it is marked cut. */
const NOTE_MAX = 4 * 1024 * 1024;

/** The notes on `commits` under `ref` (commit → its note's text; a commit without one is absent). */
export function notesOn(root: string, ref: string, commits: readonly string[]): Map<string, { text: string; cut: boolean }> {
  const out = new Map<string, { text: string; cut: boolean }>();
  if (!commits.length) return out;
  const list = git(root, ["notes", `--ref=${ref}`, "list"], { allowFail: true });
  if (list.code !== 0) return out;
  const wanted = new Set(commits);
  for (const line of list.out.split("\n")) {
    const [blob, commit] = line.trim().split(" ");
    if (!blob || !commit || !wanted.has(commit) || !/^[0-9a-f]{40,64}$/.test(blob)) continue;
    const r = git(root, ["cat-file", "blob", blob], { allowFail: true, maxBytes: NOTE_MAX });
    if (r.code === 0) out.set(commit, { text: r.out, cut: !!r.cut });
  }
  return out;
}
