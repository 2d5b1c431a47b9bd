/** A task's diff against the project's branch (diff/diff.ts: host-side hardened git in the project root, bounded). */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { taskDiff } from "../../diff";
import { Tasks } from "../../store";
import { taskRef } from "./input";

export interface DiffDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
}

export function diffRoutes(d: DiffDeps) {
  // ?stat=1: files and counts only (lazy diff --stat, lazy task show), no patch read.
  return new Elysia().get("/api/tasks/:ref/diff", async ({ params, query }) => {
    const task = Tasks.resolve(d.db, taskRef(params));
    // An accepted task's branch is in HEAD: show what its merge brought in instead.
    const merged = task.status === "accepted" ? Tasks.latest(d.db, [task.id], "summary").get(task.id)?.data.merge : undefined;
    return {
      task: { id: task.id, code: task.code, status: task.status },
      ...(await taskDiff(
        d.root,
        task.code ?? task.id,
        typeof merged === "string" && /^[0-9a-f]{40,64}$/.test(merged) ? merged : undefined,
        {
          stat: query.stat === "1",
        },
      )),
    };
  });
}
