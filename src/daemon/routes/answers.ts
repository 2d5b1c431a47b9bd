/**
 * The routes' answers checked against the shapes the dashboard's client reads
 * (dashboard/answers.ts, a floor below the daemon): each answer is read off its route (Elysia's
 * route table) and must satisfy its shape, or tsc refuses this file. A route that drops or
 * changes what the client reads fails `bun run check` here, not in a browser.
 */
import type { Answers } from "../../dashboard";
import type { askRoutes } from "./ask";
import type { authRoutes } from "./auth";
import type { boardRoutes } from "./board";
import type { groupRoutes } from "./compare";
import type { diffRoutes } from "./diff";
import type { reviewRoutes } from "./review";
import type { statsRoutes } from "./stats";
import type { taskRoutes } from "./tasks";

/** The route table of one routes file. */
type Table<F> = F extends (...args: never[]) => { "~Routes": infer R } ? R : never;
/** What a route answers with 200. */
type Ok<R> = R extends { response: { 200: infer A } } ? A : never;
/** Compiles only when the route's answer A satisfies the shape S (and A is a real answer, not never). */
type Satisfies<A extends S, S> = [A] extends [never] ? "no such route" : A;

type Board = Table<typeof boardRoutes>["api"]["board"];
type Stats = Table<typeof statsRoutes>["api"]["stats"];
type Tasks = Table<typeof taskRoutes>["api"]["tasks"];
type Groups = Table<typeof groupRoutes>["api"]["groups"][":code"];

/** Each route's answer, checked against its shape; `true` for each that is a real answer. */
export type Checked = {
  [K in keyof Routes]: Routes[K] extends "no such route" ? false : true;
};
interface Routes {
  home: Satisfies<Ok<Board["home"]["get"]>, Answers.Home>;
  inbox: Satisfies<Ok<Table<typeof reviewRoutes>["api"]["board"]["inbox"]["get"]>, Answers.Inbox>;
  taskPage: Satisfies<Ok<Board["tasks"]["get"]>, Answers.TaskPage>;
  boardTask: Satisfies<Ok<Board["tasks"][":ref"]["get"]>, Answers.BoardTask>;
  profiles: Satisfies<Ok<Board["profiles"]["get"]>, Answers.Profiles>;
  task: Satisfies<Ok<Tasks[":ref"]["get"]>, Answers.Task>;
  addedTask: Satisfies<Ok<Tasks["post"]>, Answers.AddedTask>;
  diff: Satisfies<Ok<Table<typeof diffRoutes>["api"]["tasks"][":ref"]["diff"]["get"]>, Answers.Diff>;
  trace: Satisfies<Ok<Table<typeof diffRoutes>["api"]["tasks"][":ref"]["trace"]["get"]>, Answers.Trace>;
  review: Satisfies<Ok<Table<typeof reviewRoutes>["api"]["tasks"][":ref"]["review"]["post"]>, Answers.Review>;
  comparison: Satisfies<Ok<Groups["get"]>, Answers.Comparison>;
  groupDiff: Satisfies<Ok<Groups["diff"]["get"]>, Answers.GroupDiff>;
  check: Satisfies<Ok<Groups["check"]["post"]>, Answers.Check>;
  auth: Satisfies<Ok<Table<typeof authRoutes>["api"]["auth"]["get"]>, Answers.Auth>;
  audit: Satisfies<Ok<Stats["audit"]["get"]>, Answers.Audit>;
  budget: Satisfies<Ok<Stats["budget"]["get"]>, Answers.Budget>;
  limits: Satisfies<Ok<Stats["limits"]["get"]>, Answers.Limits>;
  ask: Satisfies<Ok<Table<typeof askRoutes>["api"]["ask"]["post"]>, Answers.Ask>;
}
/** Every route above is a real answer: a renamed route (its answer `never`) fails here too. */
export const ALL_ROUTES_ANSWER: Checked = {
  home: true,
  inbox: true,
  taskPage: true,
  boardTask: true,
  profiles: true,
  task: true,
  addedTask: true,
  diff: true,
  trace: true,
  review: true,
  comparison: true,
  groupDiff: true,
  check: true,
  auth: true,
  audit: true,
  budget: true,
  limits: true,
  ask: true,
};
