/** `lazy export T`: the task's evidence bundle (src/export), gathered here; the CLI writes the file. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Config } from "../../config";
import { type CredentialStore, keyMaterial } from "../../credentials";
import { BUDGET_MB_MAX, bundle, streamed } from "../../export";
import type { ModelProxy } from "../../proxy";
import { LazyError } from "../../util/errors";
import { taskRef } from "./input";

export interface ExportRouteDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
  config: () => Config;
  version: string;
  proxy: { audit: Pick<ModelProxy["audit"], "query" | "refusals">; grants: Pick<ModelProxy["grants"], "secretsOf"> };
  /** The keys lazy stores: cut from the bundle wherever an agent wrote one. */
  credentials: Pick<CredentialStore, "snapshot">;
}

export function exportRoutes(d: ExportRouteDeps) {
  return new Elysia().get("/api/tasks/:ref/export", async ({ params, query }) => {
    const mb = query.max === undefined ? undefined : Number(query.max);
    if (mb !== undefined && !(Number.isInteger(mb) && mb >= 1 && mb <= BUDGET_MB_MAX))
      throw new LazyError("invalid_input", `--max-mb takes a whole number of MiB from 1 to ${BUDGET_MB_MAX}.`);
    const b = await bundle(
      {
        db: d.db,
        root: d.root,
        config: d.config,
        version: d.version,
        audit: d.proxy.audit,
        // The task's live grants, and every stored key (a private key's material in the forms it is written in too).
        secrets: (taskId) => [
          ...d.proxy.grants.secretsOf(taskId),
          ...Object.values(d.credentials.snapshot()).flatMap((c) => [c.value, ...keyMaterial(c.value)]),
        ],
      },
      taskRef(params),
      mb === undefined ? {} : { budget: mb * 1024 * 1024 },
    );
    // Tens of MiB of JSON: made as it is sent, not in one go on the daemon's thread.
    return new Response(streamed(b), { headers: { "content-type": "application/json; charset=utf-8" } });
  });
}
