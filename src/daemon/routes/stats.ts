/** The stats routes behind `lazy stats`: the audit trail (rows and a task's totals) and the proxy's readings. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Config } from "../../config";
import type { ModelProxy } from "../../proxy";
import { type Pause, pauseOf, report } from "../../spending";
import { Tasks } from "../../store";

export interface StatsDeps {
  db: Database;
  config: () => Config;
  proxy: Pick<ModelProxy, "stats"> & { audit: Pick<ModelProxy["audit"], "query" | "totals" | "settled" | "refusals"> };
}

export function statsRoutes(d: StatsDeps) {
  return new Elysia()
    .get("/api/stats/audit", async ({ query }) => {
      const t = query.task !== undefined ? Tasks.resolveFilter(d.db, [String(query.task)])![0] : undefined;
      const limit = Math.min(10_000, Math.max(1, Number(query.limit ?? 100) || 100));
      return {
        rows: await d.proxy.audit.query({ taskId: t?.id, limit }),
        // Refusals of callers lazy cannot attribute: one counted line per minute, source, reason
        // and status (with a task: those presenting its placeholder), never rows.
        refused: await d.proxy.audit.refusals({ taskId: t?.id, limit }),
        totals: t ? await d.proxy.audit.totals(t.id) : null,
        task: t ?? null,
      };
    })
    .get("/api/stats/budget", async ({ query }) => {
      await d.proxy.audit.settled(); // the counters include every call answered so far
      const stats = await d.proxy.stats();
      const days = Math.min(366, Math.max(1, Number(query.days ?? 30) || 30));
      return { ...report(d.db, d.config(), { days }), limits: stats.limits };
    })
    .get("/api/stats/limits", async () => {
      const stats = await d.proxy.stats();
      const credentials = [...new Set(stats.limits.map((l) => l.credential).filter((c): c is string => !!c))];
      const paused = credentials.map((c) => pauseOf(d.config().usage_pause, stats.limits, c)).filter((p): p is Pause => p !== null);
      return { ...stats, paused };
    });
}
