/**
 * Builder sessions (`lazy build`): an interactive host session of the builder role, whose agent
 * plans work with lazy's builder tools. Its grant and its MCP token are keyed by the session's
 * name and revoked together when the session ends — each on its own, so a failure in one never
 * skips the other (builder-sessions.ts, which also ends a session whose `lazy build` was
 * killed). Builder grants are capped, oldest first (proxy/identity/grants.ts).
 */
import { Elysia } from "elysia";
import { body } from "./input";
import { z } from "zod";
import { randomBytes } from "node:crypto";
import type { Config } from "../../config";
import { defaultProfile } from "../../config";
import { LazyError } from "../../util/errors";
import type { Logger } from "../../util/log";
import { MCP_PATH, type ModelProxy } from "../../proxy";
import type { McpTokens } from "../../mcp";
import { urlHost } from "../../util/url";
import * as BuilderSessions from "../builder-sessions";

export interface BuildDeps extends BuilderSessions.BuilderSessionDeps {
  config: () => Config;
  proxy: Pick<ModelProxy, "state" | "address" | "mintFor" | "revokeBuilder">;
  mcp: Pick<McpTokens, "forBuilder" | "revokeBuilder" | "builders">;
  log: Logger;
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,47}$/;

export function buildRoutes(d: BuildDeps) {
  return new Elysia()
    .post(
      "/api/build/session",
      async ({ body: input }) => {
        const session = input.name ?? `build-${randomBytes(3).toString("hex")}`;
        if (!NAME.test(session))
          throw new LazyError(
            "invalid_input",
            `"${session}" is not a session name: lower-case letters, digits, dot, dash, underscore, at most 48.`,
          );
        if (d.proxy.state !== "ready")
          throw new LazyError("proxy_unavailable", "The model proxy is not available, so no builder session can start; run lazy doctor.");
        const config = d.config();
        const launch = await d.proxy.mintFor({
          role: "builder",
          profile: input.profile ?? config.models.roles.builder ?? defaultProfile(config),
          session,
        });
        const addr = d.proxy.address!;
        const proxyUrl = `http://${urlHost(addr.host)}:${addr.port}`;
        return {
          session,
          envVar: launch.envVar,
          placeholder: launch.placeholder,
          proxyUrl,
          profile: launch.profile,
          mcp: { url: `${proxyUrl}${MCP_PATH}`, token: d.mcp.forBuilder(session, input.pid ?? null).token },
        };
      },
      body(z.strictObject({ name: z.string().optional(), profile: z.string().optional(), pid: z.number().int().positive().optional() })),
    )
    .post(
      "/api/build/end",
      async ({ body: { session } }) => {
        const { grants, tokens } = await BuilderSessions.end(d, session);
        return { session, grants, tokens };
      },
      body(z.strictObject({ session: z.string().min(1) })),
    );
}
