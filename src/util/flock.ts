/**
 * Advisory whole-file locks (flock(2)) through bun:ffi. The kernel drops the lock when the
 * holder dies, even by kill -9, so a lock never goes stale: the daemon's single-instance
 * lock and read-modify-write of shared files (the file credential store) both rely on it.
 */
import { dlopen, FFIType } from "bun:ffi";
import { closeSync, openSync } from "node:fs";

const LOCK_EX = 2;
const LOCK_NB = 4;
const LOCK_UN = 8;

const libc = dlopen(process.platform === "darwin" ? "libSystem.B.dylib" : "libc.so.6", {
  flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
});

export interface Lock {
  release(): void;
}

/** Take the lock if free; undefined when another process holds it. */
export function tryLock(path: string): Lock | undefined {
  const fd = openSync(path, "a+", 0o600);
  if (libc.symbols.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
    closeSync(fd);
    return undefined;
  }
  return held(fd);
}

/** Wait (polling, so the event loop keeps running) until the lock is ours, up to timeoutMs. */
export async function lock(path: string, timeoutMs = 10_000): Promise<Lock> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 2; ; delay = Math.min(delay * 2, 50)) {
    const l = tryLock(path);
    if (l) return l;
    if (Date.now() > deadline) throw new Error(`timed out waiting for the lock on ${path}`);
    await Bun.sleep(delay);
  }
}

function held(fd: number): Lock {
  let open = true;
  return {
    release() {
      if (!open) return;
      open = false;
      libc.symbols.flock(fd, LOCK_UN);
      closeSync(fd);
    },
  };
}
