/**
 * What a commit added, as new-side line ranges per file: host-side hardened git in the project
 * root (src/git), on objects lazy already checked on import. The commit is the agent's: its
 * paths and lines are hostile text, kept as data. Paths come from `--numstat -z` (exact bytes,
 * no quoting); hunks from `-p -U0` of the same run, paired with them by order (git lists both the same way; a
 * type change's two sections share one header and one entry), so no path is ever parsed out of
 * a patch header. Both outputs are bounded (`maxBytes`: the caller's share of its turn's budget),
 * and read without blocking the daemon's thread (run.ts), within the turn's time.
 */
import { createHash } from "node:crypto";
import { unquotePath } from "../git";
import { LazyError } from "../util/errors";
import { run } from "./run";

/** The longest patch read for one commit; past it the commit's later files get no ranges. */
export const MAX_PATCH = 16 * 1024 * 1024;
/** Files and ranges one commit's record holds at most. */
export const MAX_FILES = 2_000;
export const MAX_RANGES = 10_000;

export interface AddedRange {
  start: number;
  end: number;
  /** sha256 of the range's lines, each ending in "\n", as `sha256:<hex>`. */
  hash: string;
  /** The lines themselves (for the mapping to a tool call; never stored). */
  lines: string[];
}

export interface ChangedFile {
  path: string;
  binary: boolean;
  ranges: AddedRange[];
}

const NO_DRIVERS = ["--no-ext-diff", "--no-textconv", "--no-color", "--no-renames"];

/** The commit's parents (none: a root commit). */
export async function parents(root: string, commit: string): Promise<string[]> {
  const r = await run(root, ["rev-list", "--parents", "-n", "1", commit, "--"], 64 * 1024);
  return r.ok ? r.out.trim().split(" ").slice(1) : [];
}

/** git's diff of a commit, bounded; a failure names git's own last line. */
async function diffOf(
  root: string,
  args: string[],
  maxBytes: number,
  timeoutMs?: number,
): Promise<{ out: string; cut: boolean; bytes: number }> {
  const r = await run(root, args, maxBytes, { timeoutMs });
  if (!r.ok && !r.cut) throw new LazyError("internal", `git ${args[0]} failed: ${r.why}`);
  return { out: r.out, cut: r.cut, bytes: Buffer.byteLength(r.out) };
}

/** What a commit added, and how many patch bytes were read for it (the turn's byte budget). */
export interface Added {
  files: ChangedFile[];
  cut: boolean;
  bytes: number;
}

/**
 * The files a commit changed against its (first) parent and the line ranges it added to each.
 * `parent`: the parent when the caller knows it (null: a root commit); asked of git otherwise.
 */
export async function added(
  root: string,
  commit: string,
  parent?: string | null,
  maxBytes = MAX_PATCH,
  timeoutMs?: number,
): Promise<Added> {
  const base = parent === undefined ? (await parents(root, commit))[0] : (parent ?? undefined);
  const against = base ? [base, commit] : ["--root", commit];
  // One git run: the -z numstat entries ("added\tremoved\tpath\0", binary "-\t-\tpath"), an empty
  // entry (no path is empty), then the patch. With --root the first entry is the commit itself.
  const both = await diffOf(
    root,
    ["diff-tree", "-r", "-z", "--numstat", "-p", "-U0", "--full-index", ...NO_DRIVERS, ...against],
    Math.min(maxBytes, MAX_PATCH),
    timeoutMs,
  );
  const split = both.out.indexOf("\0\0");
  const stat = split < 0 ? both.out : both.out.slice(0, split + 1);
  const patch = split < 0 ? "" : both.out.slice(split + 2);
  const names: { path: string; binary: boolean }[] = [];
  for (const entry of stat.split("\0")) {
    const m = /^(\d+|-)\t(\d+|-)\t([\s\S]+)$/.exec(entry.replace(/^[0-9a-f]{40,64}\n/, ""));
    if (m) names.push({ path: m[3]!, binary: m[1] === "-" });
  }
  const files: ChangedFile[] = [];
  let cut = !!both.cut;
  let ranges = 0;
  let index = -1;
  let file: ChangedFile | undefined;
  let open: AddedRange | undefined;
  const close = () => {
    if (open) {
      open.hash = hashOf(open.lines);
      open = undefined;
    }
  };
  let header = "";
  for (const line of patch.split("\n")) {
    if (line.startsWith("diff --git ")) {
      close();
      // A type change (a file made a link) is two sections under one header, and one numstat entry.
      if (line === header) continue;
      header = line;
      index++;
      const n = names[index];
      file = n && !n.binary && index < MAX_FILES ? { path: n.path, binary: false, ranges: [] } : undefined;
      if (n && index < MAX_FILES) files.push(file ?? { path: n.path, binary: n.binary, ranges: [] });
      if (index >= MAX_FILES) cut = true;
      continue;
    }
    if (!file) continue;
    if (line.startsWith("@@ ")) {
      close();
      const m = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
      const start = Number(m?.[1] ?? 0);
      const count = m?.[2] === undefined ? 1 : Number(m[2]);
      if (!m || count === 0) continue;
      if (ranges >= MAX_RANGES) {
        cut = true;
        continue;
      }
      ranges++;
      open = { start, end: start + count - 1, hash: "", lines: [] };
      file.ranges.push(open);
      continue;
    }
    // -U0: a hunk's new side is exactly its "+" lines (one reading "+++ x" is content here, not a header).
    if (open && line.startsWith("+") && open.lines.length < open.end - open.start + 1) open.lines.push(line.slice(1));
  }
  close();
  // A file deleted, or changed in mode only, added no line: nothing of it to attribute.
  return { files: files.filter((f) => f.binary || f.ranges.length), cut, bytes: both.bytes };
}

export const hashOf = (lines: readonly string[]) =>
  `sha256:${createHash("sha256")
    .update(lines.map((l) => `${l}\n`).join(""))
    .digest("hex")}`;

/**
 * What a merge commit added of its own: the lines its result has that no parent has (a conflict
 * resolved, an "evil merge"), from git's combined diff (`--cc`: a line whose every parent column
 * is "+"). What it took from a parent as it was is that parent's, and gets nothing here. Each
 * section's path is read back from its header (git's quoting undone) and must be one that
 * `--name-only -z` of the same combined diff lists.
 */
export async function addedByMerge(root: string, commit: string, maxBytes = MAX_PATCH, timeoutMs?: number): Promise<Added> {
  const bound = Math.min(maxBytes, MAX_PATCH);
  const list = await diffOf(root, ["diff-tree", "-r", "-z", "--cc", "--name-only", ...NO_DRIVERS, commit], bound, timeoutMs);
  const known = new Set(list.out.split("\0").filter((n) => n && n !== commit));
  const patch = await diffOf(root, ["diff-tree", "-r", "--cc", "-U0", ...NO_DRIVERS, commit], Math.max(0, bound - list.bytes), timeoutMs);
  const files: ChangedFile[] = [];
  let cut = !!list.cut || !!patch.cut;
  let ranges = 0;
  let index = -1;
  let file: ChangedFile | undefined;
  let open: AddedRange | undefined;
  let columns = 0;
  let next = 0;
  const close = () => {
    if (open) open.hash = hashOf(open.lines);
    open = undefined;
  };
  for (const line of patch.out.split("\n")) {
    if (line.startsWith("diff --cc ") || line.startsWith("diff --combined ")) {
      close();
      index++;
      file = undefined;
      columns = 0;
      // Paired by name, not by order: --name-only lists every file the merge changed against
      // all its parents, the patch only those with a hunk --cc keeps (a file whose every hunk
      // is one parent's is left out), so the n-th of one is not the n-th of the other.
      const path = unquotePath(line.slice(line.startsWith("diff --cc ") ? 10 : 16));
      if (index >= MAX_FILES || path === null || !known.has(path)) {
        cut ||= index >= MAX_FILES;
        continue;
      }
      file = { path, binary: false, ranges: [] };
      files.push(file);
      continue;
    }
    if (!file) continue;
    const head = /^(@{3,}) (?:-\S+ )+\+(\d+)(?:,\d+)? @{3,}/.exec(line);
    if (head) {
      close();
      columns = head[1]!.length - 1;
      next = Number(head[2]);
      continue;
    }
    if (!columns || line.length < columns) continue;
    const marks = line.slice(0, columns);
    if (marks.includes("-")) continue; // a parent's line the result does not have
    if (!/^[ +]+$/.test(marks)) continue;
    const n = next++;
    if (marks !== "+".repeat(columns)) {
      close(); // a line some parent has: theirs
      continue;
    }
    if (open && open.end === n - 1) {
      open.end = n;
      open.lines.push(line.slice(columns));
    } else {
      close();
      if (ranges >= MAX_RANGES) {
        cut = true;
        continue;
      }
      ranges++;
      open = { start: n, end: n, hash: "", lines: [line.slice(columns)] };
      file.ranges.push(open);
    }
  }
  close();
  return { files: files.filter((f) => f.ranges.length), cut, bytes: list.bytes + patch.bytes };
}
