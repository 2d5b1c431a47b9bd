/**
 * Files in folders a task's container can write: its worktree, the turn folders, the ref, log
 * and object stand-ins, the harness and home folders. The agent has root in its container, and
 * root in a container writes a bind-mounted folder as root on the host, so everything below such
 * a folder is hostile: any name may be a link, a FIFO or a device node, and may change between
 * two calls. lazy runs as root in CI; following one link there would let the agent make the
 * daemon read, create, overwrite or chown any host file.
 *
 * So every path below such a folder is walked one name at a time from the folder itself (the
 * mount's root, which sits in a folder the agent cannot write), each step opened with
 * O_NOFOLLOW relative to the folder before it (Linux: through /proc/self/fd, which is openat
 * without bindings). A link, or a file where a folder is expected, is refused with a
 * `LinkRefused` naming the path. Reads are bounded; writes go to a fresh file that is renamed
 * over the name (a rename replaces a link, it never writes through it).
 */

import { randomBytes } from "node:crypto";
import {
  constants as C,
  closeSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  type Stats,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { LazyError } from "../util/errors";

/** A name below an agent-writable folder was a link, or not the kind of file expected. */
export class LinkRefused extends LazyError {
  constructor(
    readonly path: string,
    what: string,
  ) {
    super(
      "launch_refused",
      `${path} is ${what}, made by the task's container; lazy follows no link and reads no special file there, so the turn cannot go on. Remove it in the task's worktree, or close the task.`,
    );
  }
}

const PROC = process.platform === "linux";
const NOFOLLOW = C.O_NOFOLLOW ?? 0;
const DIRECTORY = C.O_DIRECTORY ?? 0;
const NONBLOCK = C.O_NONBLOCK ?? 0;

function parts(rel: string): string[] {
  const p = rel.split("/").filter((s) => s && s !== ".");
  if (p.some((s) => s === "..")) throw new LazyError("internal", `lazy asked for ${rel}, which leaves its folder`);
  return p;
}

/** The path under which `name` is opened relative to the open folder `dirFd`. */
const at = (dirFd: number, dirPath: string, name: string) => (PROC ? `/proc/self/fd/${dirFd}/${name}` : join(dirPath, name));

function refuse(path: string, e: unknown, expected: "folder" | "file"): never {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ELOOP" || code === "ENOTDIR" || code === "EMLINK")
    throw new LinkRefused(path, expected === "folder" ? "a link or a file where a folder is expected" : "a link where a file is expected");
  throw e;
}

/** Open the folder `root/rel` without following a link at any step; the caller closes it. */
function openDir(root: string, rel: string[], create: { mode: number; uid?: number } | null): number {
  let fd = openSync(root, C.O_RDONLY | DIRECTORY | NOFOLLOW);
  let path = root;
  try {
    for (const name of rel) {
      const next = at(fd, path, name);
      path = join(path, name);
      if (create)
        try {
          mkdirSync(next, { mode: create.mode });
          if (!PROC && lstatSync(next).isSymbolicLink()) throw new LinkRefused(path, "a link where a folder is expected");
          // Owned by the agent's uid when lazy is root: fchown below, on what was opened.
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
        }
      let child: number;
      try {
        child = openSync(next, C.O_RDONLY | DIRECTORY | NOFOLLOW);
      } catch (e) {
        refuse(path, e, "folder");
      }
      closeSync(fd);
      fd = child;
      if (create?.uid !== undefined && fstatSync(fd).uid !== create.uid) fchownSync(fd, create.uid, create.uid);
    }
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

function withDir<T>(
  root: string,
  rel: string,
  create: { mode: number; uid?: number } | null,
  fn: (fd: number, path: string, name: string) => T,
): T {
  const p = parts(rel);
  const name = p.pop();
  if (!name) throw new LazyError("internal", `lazy asked for ${root} itself as a file`);
  const fd = openDir(root, p, create);
  try {
    return fn(fd, join(root, ...p), name);
  } finally {
    closeSync(fd);
  }
}

/**
 * Read `root/rel` if it is a regular file: at most `max` bytes from `offset`. Missing: null.
 * A link, FIFO, device or folder there is refused (a FIFO would block the daemon forever).
 */
/**
 * Open `name` in the open folder `dir` for reading if it is a regular file; null when missing.
 * O_NONBLOCK: a FIFO must not block the daemon before fstat can refuse it.
 */
function openRegular(dir: number, dirPath: string, name: string): { fd: number; size: number } | null {
  let fd: number;
  try {
    fd = openSync(at(dir, dirPath, name), C.O_RDONLY | NOFOLLOW | NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    refuse(join(dirPath, name), e, "file");
  }
  const st = fstatSync(fd);
  if (!st.isFile()) {
    closeSync(fd);
    throw new LinkRefused(join(dirPath, name), "not a regular file");
  }
  return { fd, size: st.size };
}

export function read(root: string, rel: string, opts: { max: number; offset?: number }): { data: Buffer; size: number } | null {
  return withDir(root, rel, null, (dir, dirPath, name) => {
    const f = openRegular(dir, dirPath, name);
    if (!f) return null;
    const { fd } = f;
    try {
      const st = { size: f.size };
      const from = opts.offset ?? 0;
      const len = Math.max(0, Math.min(opts.max, st.size - from));
      const data = Buffer.alloc(len);
      let got = 0;
      while (got < len) {
        const n = readSync(fd, data, got, len - got, from + got);
        if (n <= 0) break;
        got += n;
      }
      return { data: data.subarray(0, got), size: st.size };
    } finally {
      closeSync(fd);
    }
  });
}

/** Like read, as text; null when missing. */
export function readText(root: string, rel: string, max: number): string | null {
  return read(root, rel, { max })?.data.toString("utf8") ?? null;
}

/**
 * What is at `root/rel`, without following a link at any step: null when missing (a folder on
 * the way missing too: the supervisor may not have made it yet). The last name may be a link
 * (the caller decides); a link on the way is refused.
 */
export function lstat(root: string, rel: string): Stats | null {
  try {
    return withDir(root, rel, null, (dir, dirPath, name) => lstatSync(at(dir, dirPath, name)));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}

/**
 * Write `root/rel` whole: a fresh file (O_EXCL, never through a link) renamed over the name,
 * so a link the agent left there is replaced, not followed. Folders on the way are made (and
 * owned by `uid` when given); the file too.
 */
export function write(root: string, rel: string, data: string | Uint8Array, opts: { mode?: number; uid?: number } = {}): void {
  const mode = opts.mode ?? 0o600;
  withDir(root, rel, { mode: 0o700, uid: opts.uid }, (dir, dirPath, name) => {
    const tmp = `.${name}.lazy-${process.pid}-${randomBytes(4).toString("hex")}`;
    const fd = openSync(at(dir, dirPath, tmp), C.O_WRONLY | C.O_CREAT | C.O_EXCL | NOFOLLOW, mode);
    try {
      writeSync(fd, typeof data === "string" ? Buffer.from(data) : data);
      if (opts.uid !== undefined) fchownSync(fd, opts.uid, opts.uid);
      fsyncSync(fd);
    } catch (e) {
      closeSync(fd);
      unlinkSync(at(dir, dirPath, tmp));
      throw e;
    }
    closeSync(fd);
    renameSync(at(dir, dirPath, tmp), at(dir, dirPath, name));
  });
}

/** Make the folder `root/rel` (and those on the way), owned by `uid` when given. */
export function mkdir(root: string, rel: string, opts: { mode?: number; uid?: number } = {}): void {
  closeSync(openDir(root, parts(rel), { mode: opts.mode ?? 0o700, uid: opts.uid }));
}

/** The names in the folder `root/rel` ("" for root itself); a missing folder has none. */
export function list(root: string, rel: string): string[] {
  let fd: number;
  try {
    fd = openDir(root, parts(rel), null);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  try {
    return readdirSync(PROC ? `/proc/self/fd/${fd}` : join(root, rel));
  } finally {
    closeSync(fd);
  }
}

/**
 * Open `root/rel` for reading if it is a regular file (for a child process's stdin); the
 * caller closes the descriptor. Missing: null.
 */
export function openFile(root: string, rel: string): { fd: number; size: number } | null {
  return withDir(root, rel, null, openRegular);
}

/** Move `root/from` to `root/to` (same folder tree); a rename never follows the last name. */
export function rename(root: string, from: string, to: string): void {
  const f = parts(from);
  const t = parts(to);
  const fn = f.pop()!;
  const tn = t.pop()!;
  if (f.join("/") !== t.join("/")) throw new LazyError("internal", "AgentDir.rename stays within one folder");
  const fd = openDir(root, f, null);
  try {
    renameSync(at(fd, join(root, ...f), fn), at(fd, join(root, ...f), tn));
  } finally {
    closeSync(fd);
  }
}

/** Remove the file or link `root/rel` if it is there (never what a link points at). */
export function unlink(root: string, rel: string): void {
  withDir(root, rel, null, (dir, dirPath, name) => {
    try {
      unlinkSync(at(dir, dirPath, name));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "ENOENT") throw e;
    }
  });
}
