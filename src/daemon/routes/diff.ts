/** A task's diff against the project's branch (dashboard/diff.ts: host-side hardened git in the project root, bounded). */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { Tasks } from "../../store";
import { taskDiff } from "../../dashboard";
import { taskRef } from "./input";

export interface DiffDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
}

export function diffRoutes(d: DiffDeps) {
  return new Elysia().get("/api/tasks/:ref/diff", ({ params }) => {
    const task = Tasks.resolve(d.db, taskRef(params));
    return { task: { id: task.id, code: task.code, status: task.status }, ...taskDiff(d.root, task.code ?? task.id) };
  });
}
