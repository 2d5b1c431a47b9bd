/** What `lazy daemon status` shows: the daemon's answer to GET /api/status (routes/daemon.ts), which daemon.ts fills. */
import type { Engine } from "../../containers";
import type { Fence, LinkLocalGuard } from "../../network";

export interface DaemonStatus {
  pid: number;
  version: string;
  root: string;
  slug: string;
  stateDir: string;
  startedAt: string;
  uptimeMs: number;
  web: { enabled: boolean; url: string | null };
  api: { url: string };
  proxy: { state: string; url: string | null; error?: string };
  /** Whether task containers can reach link-local metadata addresses (null: no task network yet). */
  metadata: LinkLocalGuard | null;
  /** What else task containers can reach ([container] network; null: no task network yet). */
  fence?: Fence.State | null;
  /** broken with untrusted: lazy.toml changed to keys the person has not approved (lazy trust). */
  config: {
    state: "ok" | "broken";
    /** The lazy.toml this daemon follows (absolute path). */
    file: string;
    loadedAt: string;
    present: boolean;
    problems: string[];
    brokenSince?: string;
    untrusted?: boolean;
  };
  /** The Docker engine this daemon's containers run on, and where it came from (its DOCKER_HOST or context). */
  docker?: Engine.Endpoint;
  /** Crashes the keeper answered in the last minute (keeper.ts); absent when none. */
  crashes?: { count: number; lastExit: string; lastAt: string };
  /** What a restart would cut (the CLI restarts an older daemon only when both are 0). */
  busy?: Busy;
  /**
   * The OpenTelemetry export ([telemetry] otlp), once a turn ended with it on: spans queued, sent,
   * dropped (queue full: whole turns, oldest first), lost in failed exports, cut (past a turn's
   * cap, never made), and why the collector fails now.
   */
  telemetry?: { url: string; queued: number; sent: number; dropped: number; failed: number; cut: number; failing: string | null };
}

/** Turns running, and API writes being answered (a launch setting up, lazy ask, an accept). */
export interface Busy {
  turns: number;
  requests: number;
}
