/** `lazy export T`: the task's evidence bundle (src/export), gathered here; the CLI writes the file. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Config } from "../../config";
import { bundle } from "../../export";
import type { ModelProxy } from "../../proxy";
import { taskRef } from "./input";

export interface ExportRouteDeps {
  db: Database;
  /** The project root: the only place host-side git runs. */
  root: string;
  config: () => Config;
  version: string;
  proxy: { audit: Pick<ModelProxy["audit"], "query" | "refusals"> };
}

export function exportRoutes(d: ExportRouteDeps) {
  return new Elysia().get("/api/tasks/:ref/export", ({ params }) =>
    bundle({ db: d.db, root: d.root, config: d.config, version: d.version, audit: d.proxy.audit }, taskRef(params)),
  );
}
