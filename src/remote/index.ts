/**
 * Remote engines (DOCKER_HOST=tcp://… or ssh://…), one room for a task's side of them: what
 * travels into a task's container and back (ship.ts), and the runner's handle on it
 * (tasks.ts: volumes, the proxy probe, the turn mirrored, commits brought back, lazy's own
 * calls there). Reaching the engine itself sits a layer below, in containers/, because every
 * engine connection needs it: containers/ssh-tunnel.ts (the system-ssh tunnel of an ssh://
 * engine) and containers/tar.ts (the bounded tar reader/writer, also a build context's).
 */

export { shipHarness } from "./ship";
export { RemoteTasks, type RemoteTasksDeps } from "./tasks";
