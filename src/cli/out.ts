/**
 * Every byte the CLI writes reaches its reader before the process exits, whatever stdout and
 * stderr are: a terminal, a file, or a pipe to `jq` or `head`.
 *
 * `process.stdout.write` on a pipe is asynchronous in Bun, and the `process.exit` that ends
 * every command (index.ts) drops what is still queued: `lazy task list --json | jq` got the
 * first 64 or 128 KiB and lazy still exited 0. Nor does waiting for "drain" or a write's
 * callback help (both fire early). So lazy writes with `writeSync`, straight to the file
 * descriptor: a pipe whose reader is slow answers EAGAIN once Bun has made it non-blocking,
 * and the write waits a millisecond and goes on. A reader that left (`lazy watch | head`)
 * answers EPIPE: nothing more can be said to it, so the command ends there with exit code 0,
 * quietly, as a filter's producer does.
 */
import { writeSync } from "node:fs";

const STDOUT = 1;
const STDERR = 2;

/** Write all of `text` to the descriptor, waiting out a full pipe. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text);
  let off = 0;
  while (off < bytes.length) {
    try {
      off += writeSync(fd, bytes, off);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EAGAIN") {
        Bun.sleepSync(1);
        continue;
      }
      // The reader is gone: stdout's ends the command; stderr's is not worth a word.
      if (code === "EPIPE" && fd === STDOUT) process.exit(0);
      return;
    }
  }
}

/** Data on stdout. */
export const out = (text: string): void => writeAll(STDOUT, text);
/** Words for a person on stderr. */
export const err = (text: string): void => writeAll(STDERR, text);
