/**
 * A commit's files exactly as committed, read out of the repository (ls-tree, cat-file): what
 * `lazy accept` would merge, not what a worktree holds. No checkout runs: no filter, no
 * attribute (an agent's `.gitattributes` cannot hide a file with export-ignore or run a smudge
 * driver), nothing written on the host. The tree is the agent's: every path is checked the way
 * git checks one before checking it out, a path under another entry (a link named like a
 * folder) is refused, and the whole is bounded before a blob is read.
 */
import { LazyError } from "../util/errors";
import { gitAsync, gitEnv, HARDENED } from "./run";

export interface SnapshotEntry {
  path: string;
  type: "file" | "link" | "dir";
  /** 0o755 or 0o644 for a file. */
  mode: number;
  /** A file's bytes, a link's target. */
  data?: Uint8Array;
}

export interface SnapshotBounds {
  /** All the files' bytes together (a blob that repeats counts each time). */
  bytes: number;
  files: number;
}

/** What a path component may not be (git's verify_path: `.git` in any case, `.`, `..`). */
const BAD = /^(\.git|\.|\.\.|)$/i;

/**
 * The files of `commit` (in the repository at `root`). A tree git would not check out, or over
 * `bounds`, is refused naming the path or the bound.
 */
export async function snapshot(root: string, commit: string, bounds: SnapshotBounds): Promise<SnapshotEntry[]> {
  const ls = await gitAsync(root, ["ls-tree", "-r", "-z", "--full-tree", "-l", commit]);
  const entries: { path: string; mode: string; oid: string; size: number }[] = [];
  let bytes = 0;
  for (const rec of ls.out.split("\0")) {
    if (!rec) continue;
    // "<mode> <type> <oid> <size>\t<path>"
    const tab = rec.indexOf("\t");
    const [mode, , oid, size] = rec.slice(0, tab).split(/ +/) as [string, string, string, string];
    const path = rec.slice(tab + 1);
    if (path.split("/").some((c) => BAD.test(c)) || path.includes("\\"))
      throw new LazyError("conflict", `the commit's tree has a path git would not check out: ${JSON.stringify(path)}`);
    const n = size === "-" ? 0 : Number(size);
    bytes += n;
    entries.push({ path, mode, oid, size: n });
    if (entries.length > bounds.files)
      throw new LazyError("conflict", `the commit's tree has more than ${bounds.files} files: lazy does not copy it for the check`);
    if (bytes > bounds.bytes)
      throw new LazyError(
        "conflict",
        `the commit's files are over ${Math.round(bounds.bytes / 1048576)} MiB together: lazy does not copy them for the check`,
      );
  }
  // A path below another entry (a link or file named like a folder, or an entry twice) would write through it.
  const leaves = new Set<string>();
  for (const e of entries) {
    if (leaves.has(e.path)) throw new LazyError("conflict", `the commit's tree names ${JSON.stringify(e.path)} twice`);
    leaves.add(e.path);
  }
  const dirs = new Set<string>();
  for (const e of entries) {
    const parts = e.path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const d = parts.slice(0, i).join("/");
      if (leaves.has(d))
        throw new LazyError("conflict", `the commit's tree has ${JSON.stringify(e.path)} below the file or link ${JSON.stringify(d)}`);
      dirs.add(d);
    }
  }
  const blobs = await readBlobs(root, [...new Set(entries.filter((e) => e.mode !== "160000").map((e) => e.oid))], bytes);
  const out: SnapshotEntry[] = [...dirs].sort().map((path) => ({ path, type: "dir", mode: 0o755 }));
  for (const e of entries) {
    if (e.mode === "160000")
      out.push({ path: e.path, type: "dir", mode: 0o755 }); // a submodule: an empty folder, as a checkout leaves it
    else if (e.mode === "120000") out.push({ path: e.path, type: "link", mode: 0o777, data: blobs.get(e.oid)! });
    else out.push({ path: e.path, type: "file", mode: e.mode === "100755" ? 0o755 : 0o644, data: blobs.get(e.oid)! });
  }
  return out;
}

/** The blobs' bytes by name (git cat-file --batch), never more than `max` bytes of them. */
async function readBlobs(root: string, oids: string[], max: number): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  if (!oids.length) return out;
  const p = Bun.spawn(["git", ...HARDENED, "cat-file", "--batch"], {
    cwd: root,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "ignore",
    env: gitEnv(),
  });
  p.stdin.write(`${oids.join("\n")}\n`);
  p.stdin.end();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const limit = max + oids.length * 160;
  for await (const chunk of p.stdout) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > limit) {
      p.kill();
      throw new LazyError("conflict", "git cat-file printed more than the commit's tree said it holds");
    }
  }
  await p.exited;
  const buf = Buffer.concat(chunks);
  let at = 0;
  for (const oid of oids) {
    const nl = buf.indexOf(10, at);
    const head = buf.toString("latin1", at, nl).split(" ");
    if (head[0] !== oid || head[1] !== "blob") throw new LazyError("conflict", `the commit's tree names ${oid}, which is not a blob here`);
    const n = Number(head[2]);
    out.set(oid, buf.subarray(nl + 1, nl + 1 + n));
    at = nl + 1 + n + 1;
  }
  return out;
}
