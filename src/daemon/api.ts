/**
 * The daemon's HTTP API (Elysia). Every request first passes the guard (api-guard.ts: its own
 * Host; writes in JSON and from its own origin or with the token header). Every /api route
 * requires the daemon token, as a bearer header (the CLI) or the session cookie the dashboard
 * gets from it. The routes live one file per resource in routes/. This is one of the two places
 * a LazyError becomes words (the CLI's printer is the other): a refusal made as data (its code
 * and facts) is worded here in the API's voice (words.ts), and its facts go in the answer too.
 *
 * The API takes the few things it uses (ApiDeps), not the daemon: daemon.ts builds them.
 */
import type { Database } from "bun:sqlite";
import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import type { Bus } from "../bus";
import type { Config } from "../config";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { requestGuard, sessionCookie } from "./api-guard";
import {
  type AuthDeps,
  askRoutes,
  authRoutes,
  type BuildDeps,
  type Busy,
  badBody,
  boardRoutes,
  buildRoutes,
  type DaemonStatus,
  daemonRoutes,
  dashboardRoutes,
  diffRoutes,
  type ExportRouteDeps,
  eventRoutes,
  exportRoutes,
  type GrantDeps,
  type GroupDeps,
  groupRoutes,
  issuesOf,
  memoryRoutes,
  type PruneDeps,
  proxyRoutes,
  pruneRoutes,
  reviewRoutes,
  type StatsDeps,
  statsRoutes,
  type TaskDeps,
  taskRoutes,
  type WatchDeps,
  watchRoutes,
} from "./routes";
import * as Words from "./words";

/** What the API needs from the daemon; each route file declares its own share. */
export interface ApiDeps {
  version: string;
  /** The project root (host-side git for a task's diff runs there only). */
  root: string;
  db: Database;
  bus: Pick<Bus, "publish" | "subscribe">;
  /** The config in force now (it reloads while the daemon runs). */
  config: () => Config;
  runner: TaskDeps["runner"] & GroupDeps["runner"] & PruneDeps["runner"];
  credentials: AuthDeps["credentials"] & ExportRouteDeps["credentials"];
  /** OAuth tokens about to lapse (credentials/expiry-warnings.ts). */
  expiry?: AuthDeps["expiry"] & WatchDeps["expiry"];
  broker?: AuthDeps["broker"];
  proxy: AuthDeps["proxy"] & GrantDeps["proxy"] & StatsDeps["proxy"] & WatchDeps["proxy"] & BuildDeps["proxy"] & ExportRouteDeps["proxy"];
  /** MCP tokens (builder sessions'). */
  mcp: BuildDeps["mcp"];
  log: Logger;
  /** `http://host:port` the API listens at; known once it listens (the guard reads it on the first request). */
  apiUrl: () => string;
  webEnabled: () => boolean;
  status: () => DaemonStatus;
  /** Re-check lazy.toml now (a stat-and-compare when nothing changed): config-watch.ts. */
  freshConfig: () => void;
  busy: () => Busy;
  stop: (reason: string, containers: boolean) => Promise<void>;
  /** An error that is a write finding no room: lazy's reserve is freed and the refusal says so (disk/reserve.ts). */
  diskFull?: (e: unknown) => LazyError | undefined;
}

/**
 * The routes the server must not cut for idleness: the live streams (the dashboard's, lazy watch's) are quiet for long
 * stretches (docs/wire.md, "Runtime traps"), and a turn's start may build an image for minutes before it answers
 * (an export of a long task reads its whole audit trail and diff first).
 */
export const longLived = (url: string): boolean =>
  url.includes("/api/events") ||
  url.includes("/api/watch") ||
  url.endsWith("/api/ask") ||
  url.endsWith("/api/report") ||
  /\/api\/tasks\/[^/]+\/(start|send|review|accept|export)$/.test(url);

export function api(d: ApiDeps, token: string) {
  const want = Buffer.from(token);
  const authorized = async (req: Request): Promise<boolean> => {
    const h = req.headers.get("authorization");
    const given = h?.startsWith("Bearer ") ? h.slice(7) : await sessionCookie(req);
    if (!given) return false;
    const g = Buffer.from(given);
    return g.length === want.length && timingSafeEqual(g, want);
  };

  const guard = requestGuard(d.apiUrl);

  const app = new Elysia()
    .onError(({ error, code, set }) => {
      if (error instanceof LazyError) {
        set.status = error.status;
        // A refusal made as data is worded here, in the API's voice (words.ts).
        return error.answer(Words.api);
      }
      if (code === "NOT_FOUND") {
        set.status = 404;
        return new LazyError(
          "not_found",
          "No such route on the lazy daemon; is the CLI the same version as the daemon (lazy daemon restart)?",
        ).toJSON();
      }
      if (code === "VALIDATION") {
        // A body that fails its route's schema (routes/input.ts words it).
        const v = error.validator as { schema?: unknown };
        const refusal = badBody(issuesOf(v.schema ?? v, error.value));
        set.status = refusal.status;
        return refusal.toJSON();
      }
      if (code === "PARSE") {
        set.status = 400;
        return new LazyError("invalid_input", "The request body is not valid JSON.").toJSON();
      }
      const full = d.diskFull?.(error);
      if (full) {
        set.status = full.status;
        return full.toJSON();
      }
      d.log.error(`API error: ${(error as Error)?.stack ?? String(error)}`);
      set.status = 500;
      return new LazyError("internal", "The daemon hit an internal error; see lazy daemon logs.").toJSON();
    })
    .onRequest(async ({ request, set }) => {
      // Before routing and body parsing: a refused request changes nothing.
      const refused = await guard(request);
      if (refused) {
        set.status = refused.status;
        return refused.toJSON();
      }
      const path = new URL(request.url).pathname;
      if (path.startsWith("/api/") && !(await authorized(request))) {
        set.status = 401;
        return new LazyError(
          "unauthorized",
          "The daemon token is missing or wrong; use the lazy CLI (it reads the token from the daemon's state folder).",
        ).toJSON();
      }
      // The config you see is the config that runs: a launch right after an edit of lazy.toml
      // uses the edit, without waiting for the file watch (once here, not in each route).
      if (path.startsWith("/api/")) d.freshConfig();
    })
    .use(dashboardRoutes(d, token));
  // The other rooms of routes take the daemon's deps alone, in this order (two lines only for
  // their width; their answers' types are read off each room, routes/answers.ts, not off this app).
  const first = [daemonRoutes, taskRoutes, authRoutes, proxyRoutes, statsRoutes, eventRoutes, watchRoutes];
  const then = [memoryRoutes, askRoutes, buildRoutes, boardRoutes, diffRoutes, reviewRoutes, groupRoutes, pruneRoutes, exportRoutes];
  for (const routes of [...first, ...then]) app.use(routes(d));
  return app;
}
