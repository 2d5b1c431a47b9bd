/** The daemon's own routes: health (the CLI's liveness check), status, stop. */
import { Elysia } from "elysia";
import type { Busy, DaemonStatus } from "./status";

export interface DaemonDeps {
  version: string;
  status: () => DaemonStatus;
  busy: () => Busy;
  /** `containers`: also stop the project's task containers and remove its network (lazy daemon stop). */
  stop: (reason: string, containers: boolean) => Promise<void>;
}

export function daemonRoutes(d: DaemonDeps) {
  return (
    new Elysia()
      // busy: what a restart would cut; a newer CLI restarts this daemon only when nothing is (cli/versions.ts).
      .get("/api/health", () => ({ ok: true, pid: process.pid, version: d.version, busy: d.busy() }))
      .get("/api/status", () => d.status())
      .post("/api/daemon/stop", ({ body }) => {
        // "leave": turns carry on for the next daemon (a restart). Anything else, an older CLI's {} too: stop them.
        const leave = (body as { containers?: unknown } | undefined)?.containers === "leave";
        // Answer first: the stop ends this process.
        setTimeout(() => void d.stop(leave ? "restart requested" : "stop requested", !leave), 10);
        return { stopping: true, pid: process.pid };
      })
  );
}
