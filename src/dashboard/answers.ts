/**
 * What the daemon's API answers, route by route: the shapes the dashboard's client reads. They
 * live here, below the daemon, so the client never imports the daemon (scripts/check-imports.ts,
 * floors). They are written from the functions and types that make each answer; the routes
 * check that what they answer satisfies them (daemon/routes/answers.ts: tsc refuses a route
 * whose answer drifts), so a shape here cannot promise the client what a route does not give.
 * The client imports them type-only: types vanish when it is bundled, no server code reaches
 * the browser.
 */
import type { Broker } from "../broker";
import type { Comparison as Compared } from "../compare";
import type { Config } from "../config";
import type { CredentialInfo, CredentialStore, ExpiryNotice } from "../credentials";
import type { Diff as TaskDiff } from "../diff";
import type { Traced } from "../provenance";
import type { ModelProxy, Stats } from "../proxy";
import type { BudgetReport, dayOver, modelsOfTask, Pause, spentByTask, spentOnDay, taskLimit } from "../spending";
import type { Task as StoredTask, Tasks } from "../store";
import type { question, TaskRow } from "./rows";

type Audit$ = ModelProxy["audit"];

/** A row of the task list (why it waits, its tokens, what a person can do now). */
export type Row = TaskRow;
/** GET /api/board/home */
export interface Home {
  counts: ReturnType<typeof Tasks.counts>;
  today: ReturnType<typeof spentOnDay>;
  budget: Config["budget"];
  over: ReturnType<typeof dayOver>;
  health: Stats["health"];
  active: Row[];
}
/** GET /api/board/inbox: done tasks to review, and the agents' questions in full. */
export interface Inbox {
  review: Row[];
  questions: { task: Row; question: string; at: string }[];
}
/** GET /api/board/tasks: a page of the task list. */
export type TaskPage = Omit<ReturnType<typeof Tasks.page>, "tasks"> & { tasks: Row[] };
/** GET /api/board/tasks/:ref: one task's row and budget. */
export interface BoardTask {
  task: Row;
  limit: ReturnType<typeof taskLimit>;
  question: ReturnType<typeof question>;
}
/** GET /api/board/profiles */
export interface Profiles {
  default: string;
  names: string[];
}
/** GET /api/tasks/:ref: the task and its events. */
export interface Task {
  task: StoredTask;
  events: ReturnType<typeof Tasks.events>;
  queuePlace: number | null;
  spent: ReturnType<typeof spentByTask> & { models: ReturnType<typeof modelsOfTask> };
}
/** POST /api/tasks */
export type AddedTask = StoredTask;
/** GET /api/tasks/:ref/diff */
export type Diff = { task: Pick<StoredTask, "id" | "code" | "status"> } & TaskDiff;
/** GET /api/tasks/:ref/trace?path=P&line=N: who wrote a line of the diff's new side (lazy trace at the branch). */
export type Trace = Traced;
/** POST /api/tasks/:ref/review */
export interface Review {
  task: StoredTask;
  comments: number;
  message: string;
}
/** GET /api/groups/:code: a best-of group's comparison. */
export type Comparison = Compared;
/** GET /api/groups/:code/diff?from=A&to=B: two candidates' branches, one against the other. */
export type GroupDiff = { group: string; from: string; to: string } & TaskDiff;
/** POST /api/groups/:code/check */
export interface Check {
  results: { task: string; ran: boolean; why?: string }[];
  base: { ran: boolean; why?: string };
  comparison: Comparison;
}
/** GET /api/auth */
export interface Auth {
  backend: CredentialStore["backend"];
  note: CredentialStore["backendNote"];
  credentials: CredentialInfo[];
  problems: Stats["problems"];
  defaultProfile: { name: string; credential: ReturnType<ModelProxy["credentialFor"]> };
  expiry: ExpiryNotice[];
  services: ReturnType<Broker["status"]>;
}
/** GET /api/stats/audit */
export interface Audit {
  rows: Awaited<ReturnType<Audit$["query"]>>;
  refused: Awaited<ReturnType<Audit$["refusals"]>>;
  totals: Awaited<ReturnType<Audit$["totals"]>> | null;
  task: StoredTask | null;
}
/** GET /api/stats/budget */
export type Budget = BudgetReport & { limits: Stats["limits"] };
/** GET /api/stats/limits */
export type Limits = Stats & { paused: Pause[] };
/** POST /api/ask */
export interface Ask {
  answer: string;
  profile: string;
  task: StoredTask | null;
}
