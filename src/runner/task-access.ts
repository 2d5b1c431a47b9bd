/**
 * What the runner's parts (turn-watch.ts, endings.ts) need of the runner for a task: its
 * events and status moves (recorded and published on the bus), its names and folders, its git
 * layout as lazy recorded it, and the Docker engine. The runner owns them; the parts borrow.
 */
import type { Database } from "bun:sqlite";
import type { Task } from "../store";
import type { Runtime } from "../containers";
import type * as Git from "../git";
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
