/**
 * What lazy's own calls need of the rest of the daemon (the runner hands it over), what a remote
 * engine's side of a call is (remote/tasks.ts), and what a call answers.
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import type { ProjectContainers, Runtime } from "../containers";
import type { ModelProxy } from "../proxy";
import type { Task } from "../store";
import type { Logger } from "../util/log";

export interface OwnCallDeps {
  root: string;
  slug: string;
  stateDir: string;
  db: Database;
  proxy: Pick<ModelProxy, "mintFor" | "pinCall" | "unpinCall" | "hold" | "release">;
  config: () => Config;
  log: Logger;
  /** The project's engine, image and network, shared with agent turns (containers/project.ts). */
  project: Pick<ProjectContainers, "docker" | "image" | "gateway">;
  /** The task's name as people see it (the runner's ledger). */
  ledger: { ref: (t: Task) => string };
  /** A remote engine's side of a call (the runner's RemoteTasks `calls`). */
  remote: RemoteCalls;
}

type Volume = { name: string; container: string };

/**
 * What travels for a call on a remote engine, and back (remote/tasks.ts, shared with
 * remote tasks); and the project's committed tree, which a call gets on any engine.
 */
export interface RemoteCalls {
  /** lazy's binary, and the project's committed tree in a new volume named `tree` mounted at `root`. */
  volumes(docker: Runtime, image: string, root: string, tree: string): Promise<Volume[]>;
  /** The project's committed tree alone in a new volume named `tree` mounted at `root` (a call on this machine's engine). */
  tree(docker: Runtime, image: string, root: string, tree: string): Promise<Volume>;
  /** lazy's folders into the created container, then started. */
  ship(docker: Runtime, id: string): Promise<void>;
  harness(docker: Runtime, id: string, files: Record<string, string>): Promise<void>;
  /** Mirror the call's turn folder into `hostTurns` while `going()`. */
  mirror(docker: Runtime, id: string, hostTurns: string, going: () => boolean, uid?: number): Promise<void>;
  /** One read of the turn folder (the supervisor ended: what it wrote last). */
  pull(docker: Runtime, id: string, hostTurns: string, uid?: number): Promise<void>;
  removeVolume(docker: Runtime, name: string): Promise<void>;
}

export interface Answer {
  text: string;
  /** The profile that answered. */
  profile: string;
}
