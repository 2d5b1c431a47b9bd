/** The proxy's route: a grant (placeholder credential and proxy address) for a launch. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { z } from "zod";
import { type Config, defaultProfile } from "../../config";
import { liveKey, type ModelProxy, Pid } from "../../proxy";
import { isFinal, Tasks } from "../../store";
import { LazyError } from "../../util/errors";
import { urlHost } from "../../util/url";
import { body } from "./input";

export const MintGrant = z.strictObject({
  role: z.enum(["agent", "host", "lazy"]).describe("agent: a task's turns; host: lazy chat/pair; lazy: lazy's own calls"),
  profile: z.string().optional().describe("Agent profile; the [models.roles] agent one when absent."),
  task: z.string().optional().describe("Task reference (agent role): a code or hex id prefix."),
  pid: Pid.optional().describe(
    "The host process the grant is for: a host grant redeems only while it lives (required), a task's while one of its turns runs or while it lives.",
  ),
});

export interface GrantDeps {
  db: Database;
  config: () => Config;
  proxy: Pick<ModelProxy, "state" | "address" | "mintFor" | "holdWhile">;
}

export function proxyRoutes(d: GrantDeps) {
  return new Elysia().post(
    "/api/proxy/grants",
    async ({ body: input }) => {
      if (d.proxy.state !== "ready") throw LazyError.of("proxy_unavailable", { reason: "proxy_not_ready", what: "launch" });
      const config = d.config();
      const task = input.task ? Tasks.resolve(d.db, input.task) : undefined;
      if (input.role === "agent" && !task) throw new LazyError("invalid_input", "An agent grant needs a task.");
      if (input.role === "host" && input.pid === undefined)
        throw new LazyError(
          "invalid_input",
          "A host grant needs the pid of the process it is for (it redeems only while that process lives).",
        );
      if (task && isFinal(task.status))
        throw new LazyError("conflict", `Task ${task.code ?? task.id} is ${task.status}; its session has ended.`);
      const launch = await d.proxy.mintFor({
        role: input.role,
        profile: input.profile ?? task?.profile ?? defaultProfile(config),
        taskId: task?.id ?? null,
        taskRef: task ? (task.code ?? task.id) : null,
      });
      const key = liveKey({ taskId: task?.id ?? null, role: input.role, profile: launch.profile.name, envVar: launch.envVar });
      if (key && input.pid !== undefined) await d.proxy.holdWhile(key, input.pid);
      const addr = d.proxy.address!;
      return {
        envVar: launch.envVar,
        placeholder: launch.placeholder,
        proxyUrl: `http://${urlHost(addr.host)}:${addr.port}`,
        profile: launch.profile,
        credential: launch.target.credential,
      };
    },
    body(MintGrant),
  );
}
