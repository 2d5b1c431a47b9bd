/**
 * The daemon API's routes, one file per resource. Each is a small Elysia plugin that takes only
 * what it uses (its `...Deps`); api.ts puts them behind the guard and the token check.
 */
export { taskRoutes, type TaskDeps } from "./tasks";
export { authRoutes, type AuthDeps } from "./auth";
export { proxyRoutes, type GrantDeps } from "./proxy";
export { statsRoutes, type StatsDeps } from "./stats";
export { eventRoutes, type EventDeps } from "./events";
export { daemonRoutes, type DaemonDeps } from "./daemon";
export type { DaemonStatus, Busy } from "./status";
export { dashboardRoutes, type DashboardDeps, SESSION_COOKIE } from "./dashboard";
export { watchRoutes, type WatchDeps } from "./watch";
export { memoryRoutes, type MemoryDeps } from "./memory";
export { askRoutes, type AskDeps } from "./ask";
export { boardRoutes, type BoardDeps } from "./board";
export { diffRoutes, type DiffDeps } from "./diff";
export { buildRoutes, type BuildDeps } from "./build";
export { reviewRoutes, type ReviewDeps } from "./review";
export { groupRoutes, type GroupDeps } from "./groups";
export { badBody, issuesOf } from "./input";
export type * as Answers from "./answers";
