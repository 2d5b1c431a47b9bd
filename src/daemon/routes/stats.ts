/** The stats routes behind `lazy stats`: the audit trail (rows and a task's totals) and the proxy's readings. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { LazyError } from "../../util/errors";
import { Tasks } from "../../store";
import type { Proxy } from "../../proxy";

export interface StatsDeps {
  db: Database;
  proxy: Pick<Proxy, "stats"> & { audit: Pick<Proxy["audit"], "query" | "totals"> };
}

export function statsRoutes(d: StatsDeps) {
  return new Elysia()
    .get("/api/stats/audit", async ({ query }) => {
      const task = query.task !== undefined ? String(query.task) : undefined;
      if (task !== undefined && !task.trim()) throw new LazyError("invalid_input", "An empty task filter names no task; give a code or an id prefix, or leave --task out.");
      const t = task ? Tasks.resolve(d.db, task) : undefined;
      const limit = Math.min(10_000, Math.max(1, Number(query.limit ?? 100) || 100));
      return { rows: await d.proxy.audit.query({ taskId: t?.id, limit }), totals: t ? await d.proxy.audit.totals(t.id) : null, task: t ?? null };
    })
    .get("/api/stats/limits", () => d.proxy.stats());
}
