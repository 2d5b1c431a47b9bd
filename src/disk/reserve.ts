/**
 * The daemon's reserve: a file of ballast in its state folder that is freed when the disk runs
 * low, so that the store, the audit and the daemon log — which share that disk with the task
 * worktrees and folders — still have room to write. Checked each second with one statfs: under
 * the floor the reserve is freed and the disk is "low" (the runner stops turns that write and
 * starts none, saying why and what to do); a write that fails for room frees it at once too
 * (`release`: the audit writer, the log, the API). When the disk has the floor, the reserve and
 * half a floor again free, the reserve is written anew and turns may start.
 *
 * Its bytes are random (a compressing or deduplicating filesystem would store zeros as
 * nothing), written once to a fresh name and renamed over.
 */
import { randomFillSync } from "node:crypto";
import { existsSync, rmSync, statSync } from "node:fs";
import { open, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../util/log";
import { human, type Space, space } from "./measure";

/** The reserve's name in the state folder. */
export const RESERVE_FILE = "disk-reserve";
const MiB = 1024 ** 2;

/**
 * How much is held back, and under how much free space the disk counts as low: 32 MiB (the
 * store's and audit's writes for hours of turns, the log's lines for days; every daemon writes
 * it once, so not more) and 1 GiB, or a twentieth of a small filesystem (a 256 MiB one: 12.8 MiB
 * each) so it is not low for good.
 */
export function sizes(total: number): { reserve: number; floor: number } {
  const part = Math.floor(total / 20);
  return { reserve: Math.min(32 * MiB, part), floor: Math.min(1024 * MiB, part) };
}

/** Free the reserve in `dir` (a write failed for room): true when it held something. */
export function release(dir: string): boolean {
  const f = join(dir, RESERVE_FILE);
  try {
    if (!statSync(f).size) return false;
    rmSync(f, { force: true });
    return true;
  } catch {
    return false;
  }
}

/** Whether an error is a write that found no room (SQLite's or the kernel's words). */
export function isFull(e: unknown): boolean {
  const err = e as { code?: string; message?: string } | undefined;
  return (
    err?.code === "ENOSPC" ||
    err?.code === "SQLITE_FULL" ||
    /database or disk is full|ENOSPC|no space left on device/i.test(err?.message ?? "")
  );
}

export class Reserve {
  private timer: Timer | undefined;
  private writing = false;
  private lowSince: { at: number; space: Space; floor: number } | undefined;

  constructor(private d: { dir: string; log: Logger }) {}

  get path(): string {
    return join(this.d.dir, RESERVE_FILE);
  }

  start(everyMs = 1000): void {
    this.check();
    this.timer = setInterval(() => {
      try {
        this.check();
      } catch (e) {
        this.d.log.warn(`checking the disk's free space: ${(e as Error).message}`);
      }
    }, everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Why no turn may write now (the disk under its floor), or undefined. */
  low(): string | undefined {
    const l = this.lowSince;
    if (!l) return undefined;
    return `the disk holding lazy's state (${this.d.dir}) has ${human(l.space.avail)} free of ${human(l.space.size)}, under lazy's floor of ${human(l.floor)}, so turns that write are stopped and none starts; free space on that disk (lazy close or lazy reject of finished tasks removes their worktrees), and turns start again once ${human(l.floor * 1.5 + sizes(l.space.size).reserve)} is free`;
  }

  /** A write failed for room: free the reserve now (once), and say so. */
  releaseNow(why: string): boolean {
    if (!release(this.d.dir)) return false;
    this.d.log.error(`the disk holding lazy's state is full (${why}): freed lazy's reserve so the store, audit and log can still write`);
    this.check();
    return true;
  }

  /** One statfs: free the reserve under the floor, write it again once there is room. */
  check(): void {
    const s = space(this.d.dir);
    if (!s) return;
    const { reserve, floor } = sizes(s.size);
    if (s.avail < floor) {
      if (!this.lowSince) {
        this.lowSince = { at: Date.now(), space: s, floor };
        const freed = release(this.d.dir);
        const now = space(this.d.dir) ?? s;
        this.lowSince.space = now;
        this.d.log.error(
          `the disk holding lazy's state has ${human(s.avail)} free, under the floor of ${human(floor)}: ${freed ? `freed lazy's reserve (${human(now.avail - s.avail)}) so the store, audit and log can still write; ` : ""}turns that write are stopped until there is room`,
        );
      } else this.lowSince.space = s;
      return;
    }
    const has = existsSync(this.path);
    if (this.lowSince) {
      this.lowSince.space = s;
      if (s.avail < floor * 1.5 + (has ? 0 : reserve)) return;
      this.lowSince = undefined;
      this.d.log.info(`the disk holding lazy's state has ${human(s.avail)} free again: turns may start`);
    }
    if (!has && !this.writing && reserve > 0) void this.write(reserve);
  }

  private async write(bytes: number): Promise<void> {
    this.writing = true;
    const tmp = `${this.path}.new`;
    try {
      const chunk = Buffer.alloc(Math.min(MiB, bytes));
      randomFillSync(chunk);
      const fh = await open(tmp, "w", 0o600);
      try {
        // No fsync: the filesystem counts the blocks as taken from the write on (statfs says so).
        for (let left = bytes; left > 0; left -= chunk.length) await fh.write(chunk, 0, Math.min(chunk.length, left));
      } finally {
        await fh.close();
      }
      await rename(tmp, this.path);
    } catch (e) {
      await rm(tmp, { force: true }).catch(() => {});
      this.d.log.warn(`could not write lazy's disk reserve (${human(bytes)}) in ${this.d.dir}: ${(e as Error).message}`);
    } finally {
      this.writing = false;
    }
  }
}
