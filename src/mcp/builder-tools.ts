/**
 * The tools of a builder session (`lazy build`): the agent plans work as tasks and starts them.
 * Accepting stays human: there is no tool for it. Each call goes through the same code as the
 * CLI's (the same rules, the same refusals). A session creates, and starts, at most `[build]
 * max_tasks` tasks, and every tool that writes or starts work is bounded a minute too (bounds.ts).
 */
import type { Database } from "bun:sqlite";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { Config } from "../config";
import { STATUSES, type Task, Tasks } from "../store";
import { promptSchema } from "../util/prompt";
import { BOUNDS, Bounds, type BuilderTool } from "./bounds";

export interface BuilderToolDeps {
  db: Database;
  config: () => Config;
  /** Add a task as `lazy task add` does (profile checked, the bus told). */
  add: (input: { prompt: string; code?: string; profile?: string }) => Promise<Task>;
  /** Start a task's turn (its first, or the next with a message), as `lazy start`/`send` do. */
  start: (ref: string, message?: string) => Promise<Task>;
  /** A minute in which a builder session's calls were refused: said in the daemon's log. */
  warn?: (message: string) => void;
}

const json = (value: unknown) => ({ content: [{ type: "text" as const, text: JSON.stringify(value, null, 2) }] });
const refusal = (message: string) => ({ isError: true, content: [{ type: "text" as const, text: message }] });
/** A builder's prompt or message: not empty, within lazy's bound (util/prompt.ts), and shorter still. */
const bounded = (what: string, max: number) =>
  promptSchema(what).max(
    max,
    `A builder's task ${what} is at most ${max} characters: put the long part in a file in the project and point the agent at it.`,
  );

/** How a person raises a builder session's task cap, said in its refusal. */
export const RAISE_MAX_TASKS = "[build] max_tasks in lazy.toml; a person raises it there and runs lazy trust";

/** The builder sessions' bounds of one set of deps (one daemon), shared by every session's server. */
const boundsOf = new WeakMap<BuilderToolDeps, Bounds>();
function builderBounds(d: BuilderToolDeps): Bounds {
  let b = boundsOf.get(d);
  if (!b) {
    b = new Bounds((key, tool, refused) =>
      d.warn?.(`${key.replace(/^builder:/, "builder session ")}: ${refused} ${tool} call(s) refused in one minute, past their bounds`),
    );
    boundsOf.set(d, b);
  }
  return b;
}

const brief = (t: Task) => ({ id: t.id, code: t.code, title: t.title, status: t.status, profile: t.profile });

export function registerBuilderTools(
  server: McpServer,
  d: BuilderToolDeps,
  session: { name: string; token: string },
  onBounded?: () => void,
): void {
  /** The one check of every tool that writes or starts work: null when the call may go on, else its refusal. */
  const admitted = (tool: BuilderTool, unit?: string) => {
    const capped = tool === "task_create" || tool === "task_start";
    const no = builderBounds(d).take({
      key: `builder:${session.name}`,
      tool,
      turn: `session ${session.token}`,
      unit,
      ...(capped ? { perTurn: d.config().build.max_tasks, raise: RAISE_MAX_TASKS } : {}),
    });
    if (!no) return null;
    onBounded?.();
    return refusal(no);
  };

  server.registerTool(
    "task_create",
    {
      description:
        "Add a task for an agent: what to do (the prompt), optionally a short code (e.g. fix-login) and a profile. It is queued; task_start runs it.",
      inputSchema: {
        prompt: bounded("prompt", BOUNDS.task_create.size),
        code: z.string().max(48).optional(),
        profile: z.string().max(64).optional(),
      },
    },
    async (input) => admitted("task_create") ?? json(brief(await d.add(input))),
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
    {
      description: "Run a task's first (or next) turn in its container (queued while the project runs [limits] max_running turns).",
      inputSchema: { task: z.string().min(1).max(64) },
    },
    async ({ task }) => {
      const t = Tasks.resolve(d.db, task);
      return admitted("task_start", t.id) ?? json(brief(await d.start(t.id)));
    },
  );
  server.registerTool(
    "task_send",
    {
      description: "Run a task's next turn with a message to its agent.",
      inputSchema: { task: z.string().min(1).max(64), message: bounded("message", BOUNDS.task_send.size) },
    },
    async ({ task, message }) => admitted("task_send") ?? json(brief(await d.start(task, message))),
  );
}
