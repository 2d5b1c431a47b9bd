/** The task routes: list, add, show, the task counts, and the runner's verbs on one task. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import type { Bus } from "../../bus";
import type { Config } from "../../config";
import type { Runner } from "../../runner";
import { modelsOfTask, spentByTask } from "../../spending";
import { HeldTurns, isStatus, STATUSES, type Status, Tasks } from "../../store";
import { LazyError } from "../../util/errors";
import { PROMPT_MAX_BYTES, promptSchema } from "../../util/prompt";
import { actorOf, body, taskRef } from "./input";

export const AddTask = z.strictObject({
  prompt: promptSchema("prompt").describe(`What the agent should do (not empty; at most ${PROMPT_MAX_BYTES} bytes).`),
  title: z.string().optional(),
  code: z.string().optional().describe("Unique handle such as fix-login."),
  profile: z.string().optional().describe("Agent profile; the [models.roles] agent one when absent."),
});

export interface TaskDeps {
  db: Database;
  bus: Pick<Bus, "publish">;
  /** The config in force now (it reloads while the daemon runs). */
  config: () => Config;
  runner: Pick<Runner, "start" | "stop" | "accept" | "reject" | "close" | "workspace" | "budgets" | "calls" | "memory" | "add">;
}

/** Turns queued by [limits] max_running: each task's place (1 starts next). */
const queuePlaces = (db: Database) => new Map(HeldTurns.queued(db).map((h, i) => [h.task_id, i + 1]));

export function taskRoutes(d: TaskDeps) {
  return new Elysia()
    .get("/api/tasks", ({ query }) => {
      const status = query.status as string | undefined;
      if (status !== undefined && !isStatus(status))
        throw new LazyError("invalid_input", `Unknown status "${status}": use one of ${STATUSES.join(", ")}.`);
      // A turn queued by [limits] max_running says its place (1 starts next); null otherwise.
      const places = queuePlaces(d.db);
      return Tasks.list(d.db, { status: status as Status | undefined }).map((t) => ({ ...t, queuePlace: places.get(t.id) ?? null }));
    })
    .post(
      "/api/tasks",
      async ({ body, set }) => {
        const task = await d.runner.add(body);
        set.status = 201;
        return task;
      },
      body(AddTask),
    )
    .get("/api/tasks/:ref", ({ params }) => {
      const task = Tasks.resolve(d.db, taskRef(params));
      // What it spent, priced when each request was counted, and per model served.
      const spent = { ...spentByTask(d.db, d.config(), task.id), models: modelsOfTask(d.db, task.id) };
      return { task, events: Tasks.events(d.db, task.id), queuePlace: queuePlaces(d.db).get(task.id) ?? null, spent };
    })
    .get("/api/counts", () => Tasks.counts(d.db))
    .post("/api/tasks/:ref/start", ({ params }) => d.runner.start(taskRef(params)))
    .post(
      "/api/tasks/:ref/send",
      ({ params, body }) => d.runner.start(taskRef(params), body.message),
      body(z.strictObject({ message: promptSchema("message") })),
    )
    .post("/api/tasks/:ref/stop", ({ params }) => d.runner.stop(taskRef(params)))
    .post(
      "/api/tasks/:ref/accept",
      ({ params, body, request }) => d.runner.accept(taskRef(params), { ...body, by: actorOf(request) }),
      // tip: the commit the reviewed diff ended at (the dashboard's Accept); a moved branch is refused.
      body(
        z.strictObject({
          withConfig: z.boolean().optional(),
          tip: z
            .string()
            .regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/)
            .optional(),
        }),
      ),
    )
    .post("/api/tasks/:ref/reject", ({ params, request }) => d.runner.reject(taskRef(params), actorOf(request)))
    .post("/api/tasks/:ref/close", ({ params, request }) => d.runner.close(taskRef(params), actorOf(request)))
    .post(
      "/api/tasks/:ref/budget",
      ({ params, body }) => {
        const task = Tasks.resolve(d.db, taskRef(params));
        return { task, ...d.runner.budgets.raise(task, body) };
      },
      body(
        z
          .strictObject({ tokens: z.number().int().positive().optional(), usd: z.number().positive().optional() })
          .refine((a) => a.tokens !== undefined || a.usd !== undefined, "give tokens or usd to add"),
      ),
    )
    .get("/api/tasks/:ref/workspace", ({ params }) => d.runner.workspace(taskRef(params)))
    .get("/api/tasks/:ref/events", ({ params, query }) => {
      const task = Tasks.resolve(d.db, taskRef(params));
      return { task, events: Tasks.events(d.db, task.id, Number(query.after ?? 0) || 0) };
    });
}
