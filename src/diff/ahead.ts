/**
 * Counting a task's diff ahead (issue 30): a task branch moves when a turn ends (or when the
 * person moves it), and the person reads its diff after. The daemon watches the folder git keeps
 * the task branches in (refs/heads/lazy, in the project's own git folder: the project's and
 * lazy's, never mounted writable into a container) and hands each branch that moved to the
 * diff's counter (diff.ts), so the first `lazy diff` or task page finds the counts made. Only
 * names of a task's ref shape are taken; packed refs or a reftable raise no event, and the
 * diff is then counted when asked, as before.
 */
import { existsSync, type FSWatcher, watch } from "node:fs";
import { join } from "node:path";
import * as Git from "../git";

/** A task's ref as lazy names branches: its code or its hex id (store/tasks.ts CODE_RE). */
const REF = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** git writes `<ref>.lock` and renames it: the events of one move are counted once. */
const SETTLE_MS = 5;

const watching = new Map<string, FSWatcher>();

/** Watch the project's task branches (once a root; again later if the folder is not there yet). */
export function watchBranches(root: string, moved: (ref: string) => void): void {
  if (watching.has(root)) return;
  let dir: string;
  try {
    dir = join(Git.commonDir(root), "refs", "heads", Git.BRANCH_PREFIX.replace(/\/$/, ""));
  } catch {
    return;
  }
  if (!existsSync(dir)) return; // no task branch yet: the next reading tries again
  const due = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let w: FSWatcher;
  try {
    w = watch(dir, { persistent: false }, (_event, name) => {
      // git removes the folder with its last branch (reject, pack-refs); Bun says so as a rename
      // of the folder itself and sees nothing once it is made again: the next reading re-arms.
      if (!existsSync(dir)) {
        w.close();
        watching.delete(root);
        return;
      }
      const ref = String(name ?? "").replace(/\.lock$/, "");
      if (!REF.test(ref)) return;
      due.add(ref);
      timer ??= setTimeout(() => {
        timer = undefined;
        const refs = [...due];
        due.clear();
        for (const r of refs) moved(r);
      }, SETTLE_MS);
    });
  } catch {
    return;
  }
  // The folder removed or the watch lost: the next reading arms it again.
  w.on("error", () => {
    w.close();
    watching.delete(root);
  });
  watching.set(root, w);
}
