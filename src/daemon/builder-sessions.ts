/**
 * How a builder session ends (`lazy build`): its grants and its MCP token revoked together, each
 * on its own so a failure in one never skips the other. The session's `lazy build` says so when
 * it exits; one killed outright (SIGKILL, a closed terminal) cannot, so the daemon also checks
 * the process each session was started from and ends the sessions whose process is gone (at
 * start, and every SWEEP_MS). The builder cap stays the last backstop (proxy/identity/grants.ts).
 */
import type { ModelProxy } from "../proxy";
import type { McpTokens } from "../mcp";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import { isAlive } from "../util/process";

export interface BuilderSessionDeps {
  proxy: Pick<ModelProxy, "revokeBuilder">;
  mcp: Pick<McpTokens, "revokeBuilder" | "builders">;
  log: Logger;
}

export const SWEEP_MS = 15_000;

/** End a builder session: revoke its grants and its MCP token. Throws, naming what failed. */
export async function end(d: BuilderSessionDeps, session: string): Promise<{ grants: number; tokens: number }> {
  const failed: string[] = [];
  let grants = 0;
  let tokens = 0;
  try {
    grants = await d.proxy.revokeBuilder(session);
  } catch (e) {
    failed.push(`its grants: ${(e as Error).message}`);
  }
  try {
    tokens = d.mcp.revokeBuilder(session);
  } catch (e) {
    failed.push(`its MCP token: ${(e as Error).message}`);
  }
  for (const f of failed) d.log.error(`builder session ${session}: could not revoke ${f}`);
  if (failed.length)
    throw new LazyError(
      "internal",
      `Builder session ${session} did not end cleanly: could not revoke ${failed.join("; ")}; see lazy daemon logs.`,
    );
  return { grants, tokens };
}

/** End every builder session whose `lazy build` process is gone. */
export async function sweep(d: BuilderSessionDeps): Promise<void> {
  for (const { session, pid } of d.mcp.builders()) {
    if (pid === null || isAlive(pid)) continue;
    d.log.info(
      `builder session ${session} ended without saying so (its lazy build, pid ${pid}, is gone): revoking its grant and MCP token`,
    );
    await end(d, session).catch(() => {}); // end() logged what failed; the next sweep tries again
  }
}
