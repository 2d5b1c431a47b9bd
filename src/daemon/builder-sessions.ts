/**
 * Builder sessions (`lazy build`) that ended without saying so. A session's `lazy build` ends it
 * when it exits (POST /api/build/end revokes its grant and MCP token, one registry); one killed
 * outright (SIGKILL, a closed terminal) cannot, so the daemon checks the process each session
 * was started from and ends the sessions whose process is gone (at start, and every SWEEP_MS).
 * The builder cap stays the last backstop (proxy/identity/grants.ts).
 */

import type { McpTokens } from "../mcp";
import type { ModelProxy } from "../proxy";
import type { Logger } from "../util/log";
import { isAlive } from "../util/process";

export interface BuilderSessionDeps {
  proxy: Pick<ModelProxy, "revokeBuilder">;
  mcp: Pick<McpTokens, "builders">;
  log: Logger;
}

export const SWEEP_MS = 15_000;

/** End every builder session whose `lazy build` process is gone. */
export async function sweep(d: BuilderSessionDeps): Promise<void> {
  for (const { session, pid } of d.mcp.builders()) {
    if (pid === null || isAlive(pid)) continue;
    d.log.info(
      `builder session ${session} ended without saying so (its lazy build, pid ${pid}, is gone): revoking its grant and MCP token`,
    );
    // The next sweep tries again if this fails.
    await d.proxy.revokeBuilder(session).catch((e: Error) => d.log.error(`builder session ${session}: could not revoke it: ${e.message}`));
  }
}
