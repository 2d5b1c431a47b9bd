/**
 * The runner's side of a task on a remote engine (ship.ts does the shipping): a new
 * container filled and started, its volumes (lazy's binary; the repository's objects, one
 * top-up at a time), the once-per-engine probe that its containers reach the proxy, the turn
 * folder mirrored while this daemon follows the turn, and the commits brought back after it.
 * And the same for lazy's own calls there (`calls`, handed to own-calls/ by the runner).
 */
import { join } from "node:path";
import { Image, linuxBinary, type Runtime } from "../containers";
import type * as Git from "../git";
import { MCP_PATH } from "../proxy";
import type { Task } from "../store";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { binaryVolume, bringBack, mirrorTurn, objectsVolume, probe, pullTurn, ship, shipCall, shipHarness, treeVolume } from "./ship";

export interface RemoteTasksDeps {
  slug: string;
  stateDir: string;
  log: Logger;
  docker: () => Promise<Runtime>;
  /** The runner's ledger (runner/ledger.ts): a task's ref. */
  ledger: { ref(task: Task): string };
  taskDir: (t: Task) => string;
  recordedGit: (t: Task) => Git.TaskGit | undefined;
  /** Whether this daemon follows the task's turn now (turn-watch). */
  following: (taskId: string) => boolean;
  turnOf: (taskId: string) => number;
  containerOf: (taskId: string) => string | null;
}

export class RemoteTasks {
  constructor(private d: RemoteTasksDeps) {}

  /** A remote engine's new container: its files shipped in, then started; one left unfilled is removed. */
  async shipInto(docker: Runtime, id: string, task: Task, g: Git.TaskGit): Promise<void> {
    try {
      const t0 = Date.now();
      await ship(docker, id, { g, ref: this.d.ledger.ref(task), uid: Image.agentUid() });
      this.d.log.info(`task ${this.d.ledger.ref(task)}: worktree shipped to ${docker.endpoint.host} in ${Date.now() - t0} ms`);
      await docker.start(id);
    } catch (e) {
      await docker.remove(id);
      throw new LazyError(
        "launch_refused",
        `Shipping the task's worktree to the Docker engine at ${docker.endpoint.host} failed (${(e as Error).message}); run lazy doctor.`,
      );
    }
  }

  /** A remote task container's volumes: lazy's binary, and the repository's objects (topped up first). */
  async volumes(docker: Runtime, task: Task, g: Git.TaskGit, image: string) {
    const bin = await binaryVolume(docker, linuxBinary(), image);
    const t0 = Date.now();
    const objects = await this.oneAtATime(() => objectsVolume(docker, g, this.d.slug, this.d.stateDir, image));
    if (objects.sent)
      this.d.log.info(
        `task ${this.d.ledger.ref(task)}: ${objects.sent} object files (${(objects.bytes / 1048576).toFixed(1)} MiB) sent to ${docker.endpoint.host} in ${Date.now() - t0} ms`,
      );
    return [bin, { name: objects.name, container: objects.container }];
  }

  /** One top-up of the repository's objects on a remote engine at a time (two launches would send the same files). */
  private objectsQueue: Promise<unknown> = Promise.resolve();
  private oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.objectsQueue.then(fn, fn);
    this.objectsQueue = next.catch(() => {});
    return next;
  }

  /** Engines (and proxy addresses) whose containers were seen to reach the proxy. */
  private reached = new Set<string>();

  /** Once per engine and address: a container there reaches the proxy, or the launch stops, saying what to do. */
  async probe(docker: Runtime, image: string, network: string, proxyUrl: string): Promise<void> {
    const key = `${docker.endpoint.host} ${proxyUrl}`;
    if (this.reached.has(key)) return;
    const bin = await binaryVolume(docker, linuxBinary(), image);
    const why = await probe(docker, image, network, bin, `${proxyUrl}${MCP_PATH}`);
    if (why)
      throw new LazyError(
        "launch_refused",
        `Containers on the Docker engine at ${docker.endpoint.host} cannot reach lazy's proxy at ${proxyUrl} (${why}): set [proxy] remote_bind to an address of this host that engine routes to and that no firewall blocks (then lazy trust), or unset DOCKER_HOST.`,
      );
    this.reached.add(key);
  }

  /**
   * Turns on a remote engine whose folder is being mirrored to the host, by task and turn: a
   * next turn launched while the last one's mirror still winds down gets a mirror of its own.
   */
  private mirrors = new Set<string>();

  /** Mirror a remote turn's folder to the host while this daemon follows the turn (turn-watch reads it there). */
  mirror(task: Task, id: string, turn: number): void {
    const key = `${task.id} ${turn}`;
    if (this.mirrors.has(key)) return;
    this.mirrors.add(key);
    const turns = join(this.d.taskDir(task), "turns");
    void (async () => {
      const docker = await this.d.docker();
      await mirrorTurn(docker, id, turn, turns, {
        going: () => this.d.following(task.id) && this.d.turnOf(task.id) === turn,
        warn: (why) => this.d.log.warn(`task ${this.d.ledger.ref(task)}: ${why}`),
      });
    })()
      .catch((e: unknown) => this.d.log.warn(`task ${this.d.ledger.ref(task)}: ${(e as Error).message}`))
      .finally(() => this.mirrors.delete(key));
  }

  /** The turn's folder from its container to the host, once (turn-watch, before it calls a turn lost). */
  async readTurn(task: Task, id: string, turn: number): Promise<void> {
    await pullTurn(await this.d.docker(), id, turn, join(this.d.taskDir(task), "turns"));
  }

  /**
   * What one of lazy's own calls needs on a remote engine (own-calls/calls.ts RemoteCalls): lazy's
   * binary, and the project's committed tree in a volume of the call's own (`tree`), mounted
   * read-only at the project's path; the caller removes that volume after the call. On this
   * machine's engine a call gets that tree too (`tree`): never the checkout itself.
   */
  readonly calls = {
    volumes: async (docker: Runtime, image: string, root: string, tree: string) => {
      const bin = await binaryVolume(docker, linuxBinary(), image);
      await treeVolume(docker, root, tree, image);
      return [bin, { name: tree, container: root }];
    },
    tree: async (docker: Runtime, image: string, root: string, tree: string) => {
      await treeVolume(docker, root, tree, image);
      return { name: tree, container: root };
    },
    /** lazy's folders into the created container, then started. */
    ship: async (docker: Runtime, id: string) => {
      await shipCall(docker, id, Image.agentUid());
      await docker.start(id);
    },
    harness: (docker: Runtime, id: string, files: Record<string, string>) => shipHarness(docker, id, files, Image.agentUid()),
    /** The call's one turn mirrored into its host folder while it runs (the same mirror as a task's). */
    mirror: (docker: Runtime, id: string, hostTurns: string, going: () => boolean, uid?: number) =>
      mirrorTurn(docker, id, 1, hostTurns, { going, uid, warn: (why) => this.d.log.warn(`lazy's own call: ${why}`) }),
    pull: (docker: Runtime, id: string, hostTurns: string, uid?: number) => pullTurn(docker, id, 1, hostTurns, uid),
    removeVolume: (docker: Runtime, name: string) => docker.files.removeVolume(name),
  };

  /** After a remote turn: the agent's objects and ref to the host (Git.syncBranch checks and imports them). */
  async bringBack(task: Task): Promise<string[]> {
    const docker = await this.d.docker();
    const id = this.d.containerOf(task.id);
    const g = this.d.recordedGit(task);
    if (!docker.remote || !id || !g) return [];
    return bringBack(docker, id, g, this.d.ledger.ref(task), join(this.d.taskDir(task), "harness"));
  }
}
