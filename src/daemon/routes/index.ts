/**
 * The daemon API's routes, one file per resource. Each is a small Elysia plugin that takes only
 * what it uses (its `...Deps`); api.ts puts them behind the guard and the token check.
 */

export { type AskDeps, askRoutes } from "./ask";
export { type AuthDeps, authRoutes } from "./auth";
export { type BoardDeps, boardRoutes } from "./board";
export { type BuildDeps, buildRoutes } from "./build";
export { type GroupDeps, groupRoutes } from "./compare";
export { type DaemonDeps, daemonRoutes } from "./daemon";
export { type DashboardDeps, dashboardRoutes, SESSION_COOKIE } from "./dashboard";
export { type DiffDeps, diffRoutes } from "./diff";
export { type EventDeps, eventRoutes } from "./events";

export { type ExportRouteDeps, exportRoutes } from "./export";
export { badBody, issuesOf } from "./input";
export { type MemoryDeps, memoryRoutes } from "./memory";
export { type GrantDeps, proxyRoutes } from "./proxy";
export { type PruneDeps, pruneRoutes } from "./prune";
export { type ReviewDeps, reviewRoutes } from "./review";
export { type StatsDeps, statsRoutes } from "./stats";
export type { Busy, DaemonStatus } from "./status";
export { type TaskDeps, taskRoutes } from "./tasks";
export { type WatchDeps, watchRoutes } from "./watch";
