/** The credential routes behind `lazy auth`: list (with the proxy's findings), set, remove. */
import { Elysia } from "elysia";
import { z } from "zod";
import type { Broker } from "../../broker";
import { type Config, defaultProfile } from "../../config";
import type { CredentialStore, ExpiryWarnings } from "../../credentials";
import type { ModelProxy } from "../../proxy";
import { LazyError } from "../../util/errors";
import type { Logger } from "../../util/log";
import { body } from "./input";

export const SetCredential = z.strictObject({ value: z.string().describe("The secret; it travels over the loopback API only.") });

export interface AuthDeps {
  credentials: Pick<CredentialStore, "backend" | "backendNote" | "list" | "set" | "remove">;
  proxy: Pick<ModelProxy, "stats" | "clearProblem" | "sync" | "credentialFor">;
  config: () => Config;
  expiry?: Pick<ExpiryWarnings, "notices">;
  /** Brokered services: their hosts, sources and last outcome (lazy doctor). */
  broker?: Pick<Broker, "status">;
  log: Logger;
}

export function authRoutes(d: AuthDeps) {
  return new Elysia()
    .get("/api/auth", async () => {
      const profile = defaultProfile(d.config());
      return {
        backend: d.credentials.backend,
        note: d.credentials.backendNote,
        credentials: d.credentials.list(),
        problems: (await d.proxy.stats()).problems,
        // What a task that names no profile bills (lazy doctor says when it is not stored).
        defaultProfile: { name: profile, credential: d.proxy.credentialFor(profile) },
        expiry: d.expiry?.notices() ?? [],
        services: d.broker?.status() ?? [],
      };
    })
    .put(
      "/api/auth/:name",
      async ({ params, body: { value } }) => {
        const info = await d.credentials.set(params.name, value);
        // The proxy's thread uses the new value from its next request on.
        await d.proxy.clearProblem(params.name);
        d.log.info(`credential ${params.name} set (${info.kind}, ${d.credentials.backend})`);
        return info;
      },
      body(SetCredential),
    )
    .delete("/api/auth/:name", async ({ params }) => {
      const removed = await d.credentials.remove(params.name);
      if (!removed) throw new LazyError("not_found", `No stored credential "${params.name}": see lazy auth list.`);
      await d.proxy.sync();
      d.log.info(`credential ${params.name} removed`);
      return { removed: params.name };
    });
}
