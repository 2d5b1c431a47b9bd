/**
 * What the runner's parts (turn-watch.ts, endings.ts) need for a task: the ledger its events
 * and status moves go through (ledger.ts), its folders and its git layout as lazy recorded it
 * (workspace.ts), and the Docker engine. The runner owns them; the parts borrow.
 */
import type { Database } from "bun:sqlite";
import type { Runtime } from "../containers";
import type * as Git from "../git";
import type { Task } from "../store";
import type { Logger } from "../util/log";
import type { Ledger } from "./ledger";

export interface TaskAccess {
  root: string;
  db: Database;
  log: Logger;
  docker: () => Promise<Runtime>;
  /** A task's moves and events, recorded and published; its name as people see it. */
  ledger: Ledger;
  taskDir: (task: Task) => string;
  recordedGit: (task: Task) => Git.TaskGit | undefined;
}
