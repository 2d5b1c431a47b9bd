/**
 * Secret-safe file writes: `open(tmp, "wx", mode)`, write, fsync, rename. Bun.write ignores
 * the mode (it creates 0644), so everything under the state folder is written through here.
 */

import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { LazyError } from "./errors";

/**
 * A record only this user could have written (daemon.json, trusted.json), read through one
 * descriptor: undefined when it cannot be opened; `foreign` says why it is refused when another
 * user owns it or group or others may write it (they could have written what it says).
 */
export function readOwn(path: string): { text: string } | { foreign: string } | undefined {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return undefined;
  }
  try {
    const st = fstatSync(fd);
    const me = process.geteuid?.();
    if (me !== undefined && st.uid !== me) return { foreign: `owned by uid ${st.uid}, not by you (uid ${me})` };
    if (st.mode & 0o022) return { foreign: "writable by other users" };
    return { text: readFileSync(fd, "utf8") };
  } finally {
    closeSync(fd);
  }
}

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((statSync(dir).mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
}

export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o600): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", mode);
  try {
    writeSync(fd, typeof data === "string" ? Buffer.from(data) : data);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  renameSync(tmp, path);
}

/**
 * A file a person named (lazy export -o), written whole or not at all, `mode` from its first
 * byte: a fresh file beside it, then linked in (fails if anything is there by then: nothing is
 * overwritten) or, with `replace`, renamed over a regular file. A name that is a symbolic link
 * or anything but a regular file is refused, never written through or replaced.
 */
export function writeFileNew(path: string, data: string | Uint8Array, opts: { replace: boolean; mode?: number }): void {
  const there = lstatOrNull(path);
  if (there?.isSymbolicLink())
    throw new LazyError(
      "invalid_input",
      `${path} is a symbolic link: lazy writes no file through one. Name the file itself, or another path.`,
    );
  if (there && !there.isFile()) throw new LazyError("invalid_input", `${path} exists and is not a regular file; name another path.`);
  if (there && !opts.replace) throw new LazyError("conflict", `${path} exists; --force replaces it, or name another path (-o FILE).`);
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", opts.mode ?? 0o600);
  let open = true;
  try {
    writeSync(fd, typeof data === "string" ? Buffer.from(data) : data);
    fsyncSync(fd);
    closeSync(fd);
    open = false;
    if (opts.replace) {
      // Checked again at the last moment; rename replaces a name (a link put there now included), never writes through it.
      const now = lstatOrNull(path);
      if (now && !now.isFile()) throw new LazyError("invalid_input", `${path} is no longer a regular file; nothing was written.`);
      renameSync(tmp, path);
    } else
      try {
        linkSync(tmp, path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "EEXIST")
          throw new LazyError("conflict", `${path} appeared meanwhile; nothing was written.`);
        throw e;
      }
  } finally {
    if (open) closeSync(fd);
    rmSync(tmp, { force: true });
  }
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}
