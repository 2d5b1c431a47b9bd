/** `lazy prune`'s route: the runner removes (or, on a dry run, lists) what ended tasks and old builds left. */
import { Elysia } from "elysia";
import { z } from "zod";
import type { Runner } from "../../runner";
import { body } from "./input";

export interface PruneDeps {
  runner: Pick<Runner, "prune">;
}

export function pruneRoutes(d: PruneDeps) {
  return new Elysia().post(
    "/api/prune",
    ({ body }) => d.runner.prune({ dryRun: body.dryRun ?? false }),
    body(z.strictObject({ dryRun: z.boolean().optional().describe("List what would go, remove nothing.") })),
  );
}
