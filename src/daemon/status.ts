/** What `lazy daemon status` shows: the daemon's answer to GET /api/status. */
import type { Fence, LinkLocalGuard } from "../containers";

export interface Status {
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
  config: { state: "ok" | "broken"; loadedAt: string; present: boolean; problems: string[]; brokenSince?: string };
}
