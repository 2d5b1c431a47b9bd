/**
 * What the runner's parts (turn-watch.ts, endings.ts) need for a task: the ledger its events
 * and status moves go through (ledger.ts), its folders and its git layout as lazy recorded it
 * (workspace.ts), and the Docker engine; and what launching and housekeeping both take
 * (Lifecycle). The runner owns them; the parts borrow.
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import type { ProjectContainers, Runtime } from "../containers";
import type * as Git from "../git";
import type { ModelProxy } from "../proxy";
import type { RemoteTasks } from "../remote";
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

/** What launching (launch.ts) and housekeeping (reconcile.ts) both take from the runner. */
export interface Lifecycle {
  slug: string;
  db: Database;
  log: Logger;
  config: () => Config;
  proxy: ModelProxy;
  ledger: Ledger;
  project: ProjectContainers;
  remote: RemoteTasks;
  /** Tasks whose turn (or check) is being set up: housekeeping leaves their containers be. */
  starting: Set<string>;
}
