/** The daemon's own routes: health (the CLI's liveness check), status, stop. */
import { Elysia } from "elysia";
import type { Busy, Status } from "../status";

export interface DaemonDeps {
  version: string;
  status: () => Status;
  busy: () => Busy;
  stop: (reason: string) => Promise<void>;
}

export function daemonRoutes(d: DaemonDeps) {
  return (
    new Elysia()
      // busy: what a restart would cut; a newer CLI restarts this daemon only when nothing is (cli/versions.ts).
      .get("/api/health", () => ({ ok: true, pid: process.pid, version: d.version, busy: d.busy() }))
      .get("/api/status", () => d.status())
      .post("/api/daemon/stop", () => {
        // Answer first: the stop ends this process.
        setTimeout(() => void d.stop("stop requested"), 10);
        return { stopping: true, pid: process.pid };
      })
  );
}
