/** Whether a process of this machine is still there: the daemon's record, a credential writer, a builder session's `lazy build`. */
import { readFileSync } from "node:fs";

/** One of another user counts (it exists); a zombie does not (a killed process its parent never reaped). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  if (process.platform === "linux") {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
    } catch {
      return false;
    }
  }
  return true;
}
