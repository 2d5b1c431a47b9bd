/**
 * The tools of a builder session (`lazy build`): the agent plans work as tasks and starts them.
 * Accepting stays human: there is no tool for it. Each call goes through the same code as the
 * CLI's (the same rules, the same refusals).
 */
import type { Database } from "bun:sqlite";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import { STATUSES, type Task, Tasks } from "../store";
import { promptSchema } from "../util/prompt";

export interface BuilderToolDeps {
  db: Database;
  /** Add a task as `lazy task add` does (profile checked, the bus told). */
  add: (input: { prompt: string; code?: string; profile?: string }) => Task;
  /** Start a task's turn (its first, or the next with a message), as `lazy start`/`send` do. */
  start: (ref: string, message?: string) => Promise<Task>;
}

const json = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value, null, 2) }] });
/** A builder's prompt or message: not empty, within lazy's bound (util/prompt.ts), and shorter still. */
const BUILDER_MAX = 20_000;
const bounded = (what: string) =>
  promptSchema(what).max(
    BUILDER_MAX,
    `A builder's task ${what} is at most ${BUILDER_MAX} characters: put the long part in a file in the project and point the agent at it.`,
  );

const brief = (t: Task) => ({ id: t.id, code: t.code, title: t.title, status: t.status, profile: t.profile });

export function registerBuilderTools(server: McpServer, d: BuilderToolDeps): void {
  server.registerTool(
    "task_create",
    {
      description:
        "Add a task for an agent: what to do (the prompt), optionally a short code (e.g. fix-login) and a profile. It is queued; task_start runs it.",
      inputSchema: { prompt: bounded("prompt"), code: z.string().optional(), profile: z.string().optional() },
    },
    async (input) => json(brief(d.add(input))),
  );
  server.registerTool(
    "task_list",
    {
      description: "The project's tasks (optionally of one status), oldest first.",
      inputSchema: { status: z.enum(STATUSES).optional() },
      annotations: { readOnlyHint: true },
    },
    async ({ status }) => json(Tasks.list(d.db, { status }).map(brief)),
  );
  server.registerTool(
    "task_show",
    {
      description: "One task: its prompt, status and the latest of what happened.",
      inputSchema: { task: z.string().min(1) },
      annotations: { readOnlyHint: true },
    },
    async ({ task }) => {
      const t = Tasks.resolve(d.db, task);
      return json({
        ...brief(t),
        prompt: t.prompt,
        events: Tasks.events(d.db, t.id)
          .slice(-30)
          .map((e) => ({ at: e.at, kind: e.kind, data: e.data })),
      });
    },
  );
  server.registerTool(
    "task_start",
    { description: "Run a task's first (or next) turn in its container.", inputSchema: { task: z.string().min(1) } },
    async ({ task }) => json(brief(await d.start(task))),
  );
  server.registerTool(
    "task_send",
    {
      description: "Run a task's next turn with a message to its agent.",
      inputSchema: { task: z.string().min(1), message: bounded("message") },
    },
    async ({ task, message }) => json(brief(await d.start(task, message))),
  );
}
