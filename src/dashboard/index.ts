/**
 * The dashboard, served by the daemon itself: five pages (home, tasks, a task, watch, usage)
 * as HTML shells, one client script and one stylesheet compiled into the binary, and the
 * views the pages read (rows.ts: why a task waits, its tokens; diff.ts: a task's diff). The
 * pages carry no data: the client trades the token in the URL fragment (never sent to a server
 * or a log) for a session cookie, then asks the API and follows its one live stream (SSE).
 */

/** What the daemon's API answers, route by route (the client reads these; the routes check them). */
export type * as Answers from "./answers";
export { ASSETS, type Asset, asset } from "./assets";
export { CSP, type PageName, page, pageFor } from "./pages";
export { question, rows, type TaskRow, why } from "./rows";
