/** The proxy's route: a grant (placeholder credential and proxy address) for a launch. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { LazyError } from "../../util/errors";
import { Tasks, isFinal } from "../../store";
import { defaultProfile, type Config } from "../../config";
import type { ModelProxy } from "../../proxy";
import { urlHost } from "../../util/url";
import { parseBody } from "./input";

export const MintGrant = z.strictObject({
  role: z.enum(["agent", "host", "lazy"]).describe("agent: a task's turns; host: lazy chat/pair; lazy: lazy's own calls"),
  profile: z.string().optional().describe("Agent profile; the [models.roles] agent one when absent."),
  task: z.string().optional().describe("Task reference (agent role): a code or hex id prefix."),
  pid: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      "Agent role: the host process the grant is for. A task's placeholder redeems only while one of its turns runs, or while this process lives.",
    ),
});

export interface GrantDeps {
  db: Database;
  config: () => Config;
  proxy: Pick<ModelProxy, "state" | "address" | "mintFor" | "holdWhile">;
}

export function proxyRoutes(d: GrantDeps) {
  return new Elysia().post("/api/proxy/grants", async ({ body }) => {
    const input = parseBody(MintGrant, body);
    if (d.proxy.state !== "ready")
      throw new LazyError(
        "proxy_unavailable",
        "The model proxy is not available, so nothing can be launched; run lazy doctor for the finding and remedy.",
      );
    const config = d.config();
    const task = input.task ? Tasks.resolve(d.db, input.task) : undefined;
    if (input.role === "agent" && !task) throw new LazyError("invalid_input", "An agent grant needs a task.");
    if (task && isFinal(task.status))
      throw new LazyError("conflict", `Task ${task.code ?? task.id} is ${task.status}; its session has ended.`);
    const launch = await d.proxy.mintFor({
      role: input.role,
      profile: input.profile ?? task?.profile ?? defaultProfile(config),
      taskId: task?.id ?? null,
      taskRef: task ? (task.code ?? task.id) : null,
    });
    if (task && input.pid !== undefined) await d.proxy.holdWhile(task.id, input.pid);
    const addr = d.proxy.address!;
    return {
      envVar: launch.envVar,
      placeholder: launch.placeholder,
      proxyUrl: `http://${urlHost(addr.host)}:${addr.port}`,
      profile: launch.profile,
      credential: launch.target.credential,
    };
  });
}
