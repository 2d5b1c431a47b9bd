/**
 * Reading a file that came with the checkout (lazy.toml, the Dockerfile it names): a pull can
 * make it a link to /dev/zero (read until memory runs out), a FIFO (a read that never returns,
 * on the daemon's main thread) or a huge file. A link to a plain file is followed and read.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/** The file's text if it is a regular file of at most `max` bytes; else why not, as a clause. */
export function readRegular(file: string, max: number): { text: string } | { why: string } {
  const r = readRegularBytes(file, max);
  return "bytes" in r ? { text: r.bytes.toString("utf8") } : r;
}

/**
 * The file's bytes and mode if it is a regular file of at most `max` bytes; else why not, as a
 * clause (`larger` when it is only too large). `follow: false`: a link is not followed but
 * refused ("is a link").
 */
export function readRegularBytes(
  file: string,
  max: number,
  opts: { follow?: boolean } = {},
): { bytes: Buffer; mode: number } | { why: string; larger?: true } {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | (opts.follow === false ? constants.O_NOFOLLOW : 0));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ELOOP" && opts.follow === false) return { why: "is a link" };
    throw e;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return { why: "is not a regular file (a FIFO, device or folder, perhaps behind a link)" };
    // Sized by fstat, grown while the file grows (a writer at work), never past max + 1.
    let buf = Buffer.alloc(Math.min(max, st.size) + 1);
    let n = 0;
    for (let got = 1; got > 0 && n <= max; n += got) {
      if (n === buf.length) {
        const more = Buffer.alloc(Math.min(max + 1, buf.length * 2));
        buf.copy(more);
        buf = more;
      }
      got = readSync(fd, buf, n, buf.length - n, n);
    }
    if (n > max) return { why: `is larger than ${max} bytes`, larger: true };
    return { bytes: buf.subarray(0, n), mode: st.mode };
  } finally {
    closeSync(fd);
  }
}
