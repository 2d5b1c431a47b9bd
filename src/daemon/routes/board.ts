/**
 * The dashboard's views of the task store: the task list a page at a time (filter, search,
 * each row with why, tokens, cost, last message), the home page's summary, one task's row.
 * Reads only; the verbs are the CLI's own routes (tasks.ts), so the rules and errors are one.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { type Config, defaultProfile, profileNames } from "../../config";
import { question, rows } from "../../dashboard";
import type { ModelProxy } from "../../proxy";
import { dayOver, spentOnDay, taskLimit } from "../../spending";
import { isStatus, STATUSES, type Status, Tasks } from "../../store";
import { LazyError } from "../../util/errors";
import { taskRef } from "./input";

export interface BoardDeps {
  db: Database;
  config: () => Config;
  proxy: Pick<ModelProxy, "stats"> & { audit: Pick<ModelProxy["audit"], "settled"> };
}

const statusOf = (s: unknown): Status | undefined => {
  if (s === undefined || s === "") return undefined;
  if (typeof s !== "string" || !isStatus(s))
    throw new LazyError("invalid_input", `Unknown status "${String(s)}": use one of ${STATUSES.join(", ")}.`);
  return s;
};

export function boardRoutes(d: BoardDeps) {
  return new Elysia()
    .get("/api/board/tasks", ({ query }) => {
      const p = Tasks.page(d.db, {
        status: statusOf(query.status),
        q: typeof query.q === "string" ? query.q.slice(0, 200) : undefined,
        before: typeof query.before === "string" && query.before ? query.before : undefined,
        limit: Number(query.limit ?? 50) || 50,
      });
      return { ...p, tasks: rows(d.db, d.config(), p.tasks) };
    })
    .get("/api/board/tasks/:ref", async ({ params }) => {
      const task = Tasks.resolve(d.db, taskRef(params));
      // Its tokens include every call answered so far (lazy run --json reads them as its turn ends).
      await d.proxy.audit.settled().catch(() => {});
      return { task: rows(d.db, d.config(), [task])[0]!, limit: taskLimit(d.db, d.config(), task.id), question: question(d.db, task) };
    })
    .get("/api/board/profiles", () => ({ default: defaultProfile(d.config()), names: profileNames(d.config()) }))
    .get("/api/board/home", async () => {
      const config = d.config();
      // Today's counters include every call answered so far, as lazy stats budget's do.
      await d.proxy.audit.settled().catch(() => {});
      const stats = await d.proxy.stats().catch(() => ({ health: [], limits: [], problems: {} }));
      const active = ["running", "waiting"].flatMap((status) => Tasks.page(d.db, { status: status as Status, limit: 50 }).tasks);
      return {
        counts: Tasks.counts(d.db),
        today: spentOnDay(d.db, config),
        budget: config.budget,
        over: dayOver(d.db, config),
        health: stats.health,
        active: rows(d.db, config, active),
      };
    });
}
