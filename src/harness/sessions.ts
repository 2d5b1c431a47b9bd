/**
 * A pair's own harness folder. lazy pair resumes the task's session on the host, but the task's
 * harness folder is the agent's to write: its settings.json could carry hooks, its files could
 * be links. So each pair gets a folder lazy makes afresh (<state>/harness/pair-<task id>) holding
 * only copies of the session transcripts (read without following a link, bounded), and what the
 * pair added to them is copied back afterwards, so the next container turn resumes it.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import * as AgentDir from "../agent-dir";
import { ensurePrivateDir, writeFileAtomic } from "../util/files";

/** Bounds on what one pair copies: a file, all of it, how many, how deep. */
const MAX_FILE = 256 * 1024 * 1024;
const MAX_TOTAL = 1024 * 1024 * 1024;
const MAX_FILES = 20_000;
const MAX_DEPTH = 8;

export interface Copied {
  /** Relative path → the copy's modification time, to tell what the pair changed. */
  files: Map<string, number>;
  /** What was left out, one line each (a link, a special file, over a bound). */
  skipped: string[];
}

/**
 * Make `to` afresh with copies of the regular files under `paths` of the agent-written `from`.
 * Links and special files are left out (and named); nothing is followed.
 */
export function copyIn(from: string, to: string, paths: readonly string[]): Copied {
  rmSync(to, { recursive: true, force: true });
  ensurePrivateDir(to);
  const out: Copied = { files: new Map(), skipped: [] };
  if (!lstatSync(from, { throwIfNoEntry: false })?.isDirectory()) return out; // no turn has run yet
  let total = 0;
  const visit = (rel: string, depth: number): void => {
    if (out.files.size >= MAX_FILES) return void out.skipped.push(`${rel} (over ${MAX_FILES} files)`);
    let st: ReturnType<typeof AgentDir.lstat>;
    try {
      st = AgentDir.lstat(from, rel);
    } catch (e) {
      if (e instanceof AgentDir.LinkRefused) return void out.skipped.push(`${rel} (a link on the way)`);
      throw e;
    }
    if (!st) return;
    if (st.isDirectory()) {
      if (depth >= MAX_DEPTH) return void out.skipped.push(`${rel} (deeper than ${MAX_DEPTH} folders)`);
      for (const name of AgentDir.list(from, rel).sort()) visit(`${rel}/${name}`, depth + 1);
      return;
    }
    if (!st.isFile()) return void out.skipped.push(`${rel} (${st.isSymbolicLink() ? "a link" : "not a regular file"})`);
    if (st.size > MAX_FILE || total + st.size > MAX_TOTAL) return void out.skipped.push(`${rel} (too large to copy)`);
    let got: ReturnType<typeof AgentDir.read>;
    try {
      got = AgentDir.read(from, rel, { max: MAX_FILE });
    } catch (e) {
      if (e instanceof AgentDir.LinkRefused) return void out.skipped.push(`${rel} (changed into a link)`);
      throw e;
    }
    if (!got) return;
    total += got.data.length;
    const dest = join(to, rel);
    mkdirSync(dirname(dest), { recursive: true, mode: 0o700 });
    writeFileAtomic(dest, got.data);
    out.files.set(rel, statSync(dest).mtimeMs);
  };
  for (const p of paths) visit(p, 0);
  return out;
}

/**
 * Copy back into the task's harness folder the transcripts the pair wrote or changed in its own
 * folder `from` (lazy's, written by the harness the user ran). Written through AgentDir: a link
 * the agent left at a name is replaced, never followed; one on the way refuses that file (named).
 */
export function copyBack(from: string, to: string, paths: readonly string[], before: Copied): string[] {
  const problems: string[] = [];
  // When lazy runs as root the task's folder belongs to the agent's uid; its files must too.
  const uid = process.getuid?.() === 0 ? statSync(to).uid : undefined;
  let count = 0;
  const visit = (rel: string, depth: number): void => {
    const path = join(from, rel);
    const st = lstatSync(path, { throwIfNoEntry: false });
    if (!st || count >= MAX_FILES) return;
    if (st.isDirectory()) {
      if (depth < MAX_DEPTH) for (const name of readdirSync(path).sort()) visit(`${rel}/${name}`, depth + 1);
      return;
    }
    if (!st.isFile() || st.size > MAX_FILE || before.files.get(rel) === st.mtimeMs) return;
    count++;
    try {
      AgentDir.write(to, rel, readFileSync(path), { mode: 0o600, uid });
    } catch (e) {
      if (!(e instanceof AgentDir.LinkRefused)) throw e;
      problems.push(e.message);
    }
  };
  for (const p of paths) visit(p, 0);
  return problems;
}
