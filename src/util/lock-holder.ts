/**
 * Which process holds an flock(2) on a file, from the kernel's table of locks (Linux
 * /proc/locks), without taking the lock: a probe that took it, however briefly, could make a
 * daemon starting at that instant think another one runs. The CLI asks it of the daemon's
 * single-instance lock before it believes the pid daemon.json names (cli/client.ts).
 */
import { readFileSync, statSync } from "node:fs";

/**
 * The pid holding an exclusive flock on `path`; null when none does; undefined when that
 * cannot be told (no /proc/locks: not Linux; or no such file).
 */
export function flockHolder(path: string, read: (p: string) => string = (p) => readFileSync(p, "utf8")): number | null | undefined {
  let ino: bigint;
  let dev: bigint;
  let table: string;
  try {
    const st = statSync(path, { bigint: true });
    ino = st.ino;
    dev = st.dev;
    table = read("/proc/locks");
  } catch {
    return undefined;
  }
  // Linux's device number: major in bits 8-19 and 32+, minor in bits 0-7 and 20+ (glibc's gnu_dev_major/minor).
  const major = ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn);
  const minor = (dev & 0xffn) | ((dev >> 12n) & ~0xffn);
  const want = `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}:${ino}`;
  for (const line of table.split("\n")) {
    // "1: FLOCK  ADVISORY  WRITE 1732 fe:00:2331053 0 EOF"; a blocked waiter's line has "->" after the number.
    const f = line.trim().split(/\s+/);
    if (f[1] !== "FLOCK" || f[3] !== "WRITE") continue;
    if (f[5] === want) return Number(f[4]);
  }
  return null;
}
