/**
 * Reading a file that came with the checkout (lazy.toml, the Dockerfile it names): a pull can
 * make it a link to /dev/zero (read until memory runs out), a FIFO (a read that never returns,
 * on the daemon's main thread) or a huge file. A link to a plain file is followed and read.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";

/** The file's text if it is a regular file of at most `max` bytes; else why not, as a clause. */
export function readRegular(file: string, max: number): { text: string } | { why: string } {
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) return { why: "is not a regular file (a FIFO, device or folder, perhaps behind a link)" };
    const buf = Buffer.alloc(max + 1);
    let n = 0;
    for (let got = 1; got > 0 && n < buf.length; n += got) got = readSync(fd, buf, n, buf.length - n, n);
    if (n > max) return { why: `is larger than ${max} bytes` };
    return { text: buf.toString("utf8", 0, n) };
  } finally {
    closeSync(fd);
  }
}
