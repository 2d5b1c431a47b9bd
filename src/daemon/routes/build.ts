/**
 * Builder sessions (`lazy build`): an interactive host session of the builder role, whose agent
 * plans work with lazy's builder tools. Its grant and its MCP token are keyed by the session's
 * name and revoked together, one registry, when the session ends (the daemon's
 * builder-sessions.ts also ends a session whose `lazy build` was killed). Builder grants are
 * capped, oldest first (proxy/identity/grants.ts).
 */

import { randomBytes } from "node:crypto";
import { Elysia } from "elysia";
import { z } from "zod";
import { type Config, defaultProfile } from "../../config";
import type { McpTokens } from "../../mcp";
import { MCP_PATH, type ModelProxy, Pid } from "../../proxy";
import { LazyError } from "../../util/errors";
import { urlHost } from "../../util/url";
import { body } from "./input";

export interface BuildDeps {
  config: () => Config;
  proxy: Pick<ModelProxy, "state" | "address" | "mintFor" | "revokeBuilder">;
  mcp: Pick<McpTokens, "forBuilder">;
  /** Refused while lazy.toml changed and is not trusted (runner/index.ts). */
  runner: { mustTrust(): void };
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,47}$/;

export function buildRoutes(d: BuildDeps) {
  return new Elysia()
    .post(
      "/api/build/session",
      async ({ body: input }) => {
        d.runner.mustTrust();
        const session = input.name ?? `build-${randomBytes(3).toString("hex")}`;
        if (!NAME.test(session))
          throw new LazyError(
            "invalid_input",
            `"${session}" is not a session name: lower-case letters, digits, dot, dash, underscore, at most 48.`,
          );
        if (d.proxy.state !== "ready") throw LazyError.of("proxy_unavailable", { reason: "proxy_not_ready", what: "builder" });
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
      body(z.strictObject({ name: z.string().optional(), profile: z.string().optional(), pid: Pid.optional() })),
    )
    .post(
      "/api/build/end",
      async ({ body: { session } }) => {
        // Its grant and its MCP token, in one registry: revoked together.
        return { session, revoked: await d.proxy.revokeBuilder(session) };
      },
      body(z.strictObject({ session: z.string().min(1) })),
    );
}
