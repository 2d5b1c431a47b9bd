/**
 * What the API answers, route by route, as types read off the routes themselves (Elysia's
 * route table), so they cannot drift from the code that answers. The dashboard's client imports
 * them type-only (`import type { Answers } from "../../daemon"`): types vanish when the client is bundled, and no
 * server code reaches the browser.
 */
import type { askRoutes } from "./ask";
import type { authRoutes } from "./auth";
import type { boardRoutes } from "./board";
import type { diffRoutes } from "./diff";
import type { groupRoutes } from "./groups";
import type { reviewRoutes } from "./review";
import type { statsRoutes } from "./stats";
import type { taskRoutes } from "./tasks";

/** The route table of one routes file. */
type Table<F> = F extends (...args: never[]) => { "~Routes": infer R } ? R : never;
/** What a route answers with 200. */
type Ok<R> = R extends { response: { 200: infer A } } ? A : never;

type Board = Table<typeof boardRoutes>["api"]["board"];
type Stats = Table<typeof statsRoutes>["api"]["stats"];
type Tasks = Table<typeof taskRoutes>["api"]["tasks"];

/** GET /api/board/home */
export type Home = Ok<Board["home"]["get"]>;
/** GET /api/board/inbox */
export type Inbox = Ok<Table<typeof reviewRoutes>["api"]["board"]["inbox"]["get"]>;
/** GET /api/board/tasks: a page of the task list. */
export type TaskPage = Ok<Board["tasks"]["get"]>;
/** GET /api/board/tasks/:ref: one task's row and budget. */
export type BoardTask = Ok<Board["tasks"][":ref"]["get"]>;
/** GET /api/board/profiles */
export type Profiles = Ok<Board["profiles"]["get"]>;
/** A row of the task list (why it waits, its tokens, what a person can do now). */
export type Row = TaskPage["tasks"][number];
/** GET /api/tasks/:ref: the task and its events. */
export type Task = Ok<Tasks[":ref"]["get"]>;
/** POST /api/tasks */
export type AddedTask = Ok<Tasks["post"]>;
/** GET /api/tasks/:ref/diff */
export type Diff = Ok<Table<typeof diffRoutes>["api"]["tasks"][":ref"]["diff"]["get"]>;
/** GET /api/tasks/:ref/trace?path=P&line=N: who wrote a line of the diff's new side. */
export type Trace = Ok<Table<typeof diffRoutes>["api"]["tasks"][":ref"]["trace"]["get"]>;
/** POST /api/tasks/:ref/review */
export type Review = Ok<Table<typeof reviewRoutes>["api"]["tasks"][":ref"]["review"]["post"]>;
/** GET /api/groups/:code: a best-of group's comparison. */
export type Comparison = Ok<Table<typeof groupRoutes>["api"]["groups"][":code"]["get"]>;
/** GET /api/groups/:code/diff?from=A&to=B: two candidates' branches, one against the other. */
export type GroupDiff = Ok<Table<typeof groupRoutes>["api"]["groups"][":code"]["diff"]["get"]>;
/** POST /api/groups/:code/check */
export type Check = Ok<Table<typeof groupRoutes>["api"]["groups"][":code"]["check"]["post"]>;
/** GET /api/auth */
export type Auth = Ok<Table<typeof authRoutes>["api"]["auth"]["get"]>;
/** GET /api/stats/audit */
export type Audit = Ok<Stats["audit"]["get"]>;
/** GET /api/stats/budget */
export type Budget = Ok<Stats["budget"]["get"]>;
/** GET /api/stats/limits */
export type Limits = Ok<Stats["limits"]["get"]>;
/** POST /api/ask */
export type Ask = Ok<Table<typeof askRoutes>["api"]["ask"]["post"]>;
