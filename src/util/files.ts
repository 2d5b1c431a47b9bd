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
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";

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
