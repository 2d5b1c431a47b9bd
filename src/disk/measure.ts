/**
 * What a set of folders takes on disk, and how much a filesystem has free. Blocks, not file
 * sizes: a sparse file takes what it holds, a preallocated one (fallocate) what it reserved,
 * and a thousand one-byte files a thousand blocks — what fills a disk. The walk is du's
 * (coreutils or BSD: `-s -k -x`, links not followed, hard links once), in a child process: a
 * large worktree's walk costs tens of milliseconds of C, off the daemon's thread.
 */
import { statfsSync } from "node:fs";

/** The longest a walk may take before it is cut (a tree of millions of files): what it read is not trusted then. */
const WALK_MS = 60_000;

export interface Walked {
  /** Bytes of the blocks the folders take (those it could read). */
  bytes: number;
  /** The same, per path walked (a path that is not there is missing). */
  each: Map<string, number>;
  /** du's own complaints (a folder it may not read), at most a few, for the log. */
  problems: string[];
}

/** Blocks taken under `paths` (folders that do not exist count 0). Never follows a link out. */
export async function walk(paths: readonly string[]): Promise<Walked> {
  if (!paths.length) return { bytes: 0, each: new Map(), problems: [] };
  const p = Bun.spawn(["du", "-s", "-k", "-x", "--", ...paths], { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const cut = setTimeout(() => p.kill("SIGKILL"), WALK_MS);
  try {
    const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    if (p.signalCode) throw new Error(`du took over ${WALK_MS / 1000} s and was stopped`);
    let kib = 0;
    const each = new Map<string, number>();
    for (const line of out.split("\n")) {
      const tab = line.indexOf("\t");
      const n = Number.parseInt(line, 10);
      if (tab < 0 || !Number.isFinite(n)) continue;
      kib += n;
      each.set(line.slice(tab + 1), n * 1024);
    }
    const problems = err
      .split("\n")
      .filter((l) => l && !/No such file or directory/.test(l))
      .slice(0, 3);
    return { bytes: kib * 1024, each, problems };
  } finally {
    clearTimeout(cut);
  }
}

export interface Space {
  /** Bytes the filesystem holds in all. */
  size: number;
  /** Bytes free for anyone (root's reserved blocks included): what writes use up. */
  free: number;
  /** Bytes free for an unprivileged process: what lazy counts as room. */
  avail: number;
}

/** One statfs (about a microsecond): the filesystem's own accounting, current at each write. */
export function space(path: string): Space | undefined {
  try {
    const s = statfsSync(path);
    const b = Number(s.bsize);
    return { size: Number(s.blocks) * b, free: Number(s.bfree) * b, avail: Number(s.bavail) * b };
  } catch {
    return undefined;
  }
}

/** "1.5 GiB", "64 MiB", "12 KiB": a size as people read it. */
export function human(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} bytes` : `${v >= 10 || Number.isInteger(v) ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}
