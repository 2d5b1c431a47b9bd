/** Whether a process of this machine is still there: the daemon's record, a credential writer, a builder session's `lazy build`. */
import { readFileSync, statSync } from "node:fs";

/**
 * Whether `pid` is a live process of this user: the pid a daemon record names may have been
 * reused since the daemon died, by another user's process that has meanwhile taken the
 * daemon's port and answers in its name. Such a process gets neither the API token nor a signal.
 */
export function isOurs(pid: number): boolean {
  // Another user's answers EPERM (isAlive's "exists"), unless this is root: /proc's owner says.
  if (!isAlive(pid)) return false;
  if (process.platform !== "linux") return signalable(pid);
  try {
    return statSync(`/proc/${pid}`).uid === process.getuid?.();
  } catch {
    return false;
  }
}

const signalable = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

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
