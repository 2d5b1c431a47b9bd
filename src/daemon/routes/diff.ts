/** A task's diff against the project's branch (diff/diff.ts: host-side hardened git in the project root, bounded). */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Config } from "../../config";
import { taskDiff } from "../../diff";
import * as Git from "../../git";
import * as Provenance from "../../provenance";
import { Tasks } from "../../store";
import { taskRef } from "./input";

export interface DiffDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
  config: () => Config;
}

/** The commit an accepted task's merge made (its branch is in HEAD), if lazy recorded one. */
function mergeOf(db: Database, task: { id: string; status: string }): string | undefined {
  const merged = task.status === "accepted" ? Tasks.latest(db, [task.id], "summary").get(task.id)?.data.merge : undefined;
  return typeof merged === "string" && /^[0-9a-f]{40,64}$/.test(merged) ? merged : undefined;
}

export function diffRoutes(d: DiffDeps) {
  // ?stat=1: files and counts only (lazy diff --stat, lazy task show), no patch read.
  return (
    new Elysia()
      .get("/api/tasks/:ref/diff", async ({ params, query }) => {
        const task = Tasks.resolve(d.db, taskRef(params));
        // An accepted task's branch is in HEAD: show what its merge brought in instead.
        return {
          task: { id: task.id, code: task.code, status: task.status },
          ...(await taskDiff(d.root, task.code ?? task.id, mergeOf(d.db, task), { stat: query.stat === "1" })),
        };
      })
      // Who wrote a line of the diff's new side (the page's hover on a line): `lazy trace` at the
      // branch's tip, or at the merge an accept made. Its git (blame, the note) never blocks the
      // daemon's thread and is stopped past HOVER_MS: a hostile history only costs its own answer.
      .get("/api/tasks/:ref/trace", ({ params, query }) => {
        const task = Tasks.resolve(d.db, taskRef(params));
        const rev = mergeOf(d.db, task) ?? `refs/heads/${Git.BRANCH_PREFIX}${task.code ?? task.id}`;
        return Provenance.traceAt(d.root, rev, String(query.path ?? ""), Number(query.line), d.config().provenance.prompts);
      })
  );
}
