/**
 * The tools a task's agent gets through lazy's MCP route. Each runs for the task its token
 * belongs to (tokens.ts): what the agent passes never names another task. Their effects are
 * lazy's own records — task events (live in watch and the dashboard), the run's question and
 * summary, project memory — never files in the agent's worktree. The tools that write refuse a
 * task with no running turn (a background process left in a finished task's container must not
 * rewrite its summary while it waits for review), and what they store is bounded (bounds.ts).
 */
import type { Database } from "bun:sqlite";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { Config } from "../config";
import { overFor, spentByTask, taskLimit } from "../spending";
import { Memory, Runs, type Task, Tasks } from "../store";
import { BOUNDS, Bounds, PROGRESS_PER_MINUTE, type TaskTool } from "./bounds";

export interface TaskToolDeps {
  db: Database;
  config: () => Config;
  /** Record an event on the task and tell the bus (watch, dashboard). */
  event: (task: Task, kind: string, data: Record<string, unknown>) => void;
  /** The branch a task's commits land on. */
  branchOf: (task: Task) => string;
  /** An agent's note made memory grow: compact it if it passed its bound (in the background; rate-limited for agents). */
  compact?: () => void;
}

const text = (value: unknown) => ({
  content: [{ type: "text" as const, text: typeof value === "string" ? value : JSON.stringify(value, null, 2) }],
});

const refusal = (message: string) => ({ isError: true, content: [{ type: "text" as const, text: message }] });

/**
 * The bounds of one set of deps (one daemon): shared by every server of every token. A minute
 * with refused calls is recorded once on the task: progress notes as `progress_dropped`, the
 * other tools as `calls_refused` naming the tool and its bound.
 */
const boundsOf = new WeakMap<TaskToolDeps, Bounds>();
export function taskBounds(d: TaskToolDeps): Bounds {
  let b = boundsOf.get(d);
  if (!b) {
    b = new Bounds((taskId, tool, refused) => {
      const t = Tasks.byId(d.db, taskId);
      if (!t) return;
      if (tool === "report_progress") d.event(t, "progress_dropped", { dropped: refused, perMinute: PROGRESS_PER_MINUTE });
      else d.event(t, "calls_refused", { tool, refused, perTurn: BOUNDS[tool].perTurn, perMinute: BOUNDS[tool].perMinute });
    });
    boundsOf.set(d, b);
  }
  return b;
}

/** `bounded`: told when a call is refused by its bound (the route then audits it as counted, not a row of its own). */
export function registerTaskTools(server: McpServer, d: TaskToolDeps, taskId: string, bounded?: () => void): void {
  const task = () => Tasks.resolve(d.db, taskId);
  /** The task, when it has a running turn; else the tool's refusal naming its status. */
  const running = (what: string): { t: Task; refused?: undefined } | { t?: undefined; refused: ReturnType<typeof refusal> } => {
    const t = task();
    if (t.status === "running") return { t };
    return {
      refused: refusal(`Task ${t.code ?? t.id} is ${t.status}, not running: only a running turn can ${what}. Nothing was recorded.`),
    };
  };
  /**
   * The one check every writing tool passes before it stores anything: the task has a running
   * turn, and the call is within its tool's bounds (bounds.ts). The task when it may go on.
   */
  const admitted = (
    tool: TaskTool,
    what: string,
  ): { t: Task; refused?: undefined } | { t?: undefined; refused: ReturnType<typeof refusal> } => {
    const r = running(what);
    if (r.refused) return r;
    const no = taskBounds(d).take({ key: r.t.id, tool, turn: Runs.get(d.db, r.t.id).turn });
    if (!no) return r;
    bounded?.();
    return { refused: refusal(no) };
  };

  server.registerTool(
    "task_info",
    {
      description: "Your task: its code, title, prompt and status, the branch your commits land on, and the token budget left.",
      annotations: { readOnlyHint: true },
    },
    async () => {
      const t = task();
      const config = d.config();
      const limit = taskLimit(d.db, config, t.id);
      const spent = spentByTask(d.db, config, t.id);
      const over = overFor(d.db, config, { id: t.id, ref: t.code ?? t.id });
      return text({
        task: { id: t.id, code: t.code, title: t.title, prompt: t.prompt, status: t.status },
        branch: d.branchOf(t),
        budget: {
          tokens: {
            limit: limit.tokens,
            spent: spent.tokens,
            left: limit.tokens === null ? null : Math.max(0, limit.tokens - spent.tokens),
          },
          usd: {
            limit: limit.usd,
            // What the models with a known price cost; `unpriced` names those without one, whose
            // tokens the budget counts at the dearest rates lazy knows (`left` is after them).
            spent: spent.knownUsd,
            left: limit.usd === null ? null : Math.max(0, limit.usd - spent.budgetUsd),
            unpriced: spent.unpriced,
          },
          reached: over?.message ?? null,
        },
      });
    },
  );

  server.registerTool(
    "report_progress",
    {
      description: "Tell the human how the work is going, in one or two sentences. It shows live in lazy watch and on the dashboard.",
      inputSchema: { note: z.string().min(1).max(BOUNDS.report_progress.size) },
    },
    async ({ note }) => {
      const { t, refused } = admitted("report_progress", "report progress");
      if (refused) return refused;
      d.event(t, "progress", { text: note });
      return text("Noted.");
    },
  );

  server.registerTool(
    "ask_human",
    {
      description:
        "Ask the human a question you cannot answer yourself, then end your turn. The task waits; the human's answer arrives as your next message.",
      inputSchema: { question: z.string().min(1).max(BOUNDS.ask_human.size) },
    },
    async ({ question }) => {
      const { t, refused } = admitted("ask_human", "ask the human");
      if (refused) return refused;
      Runs.save(d.db, t.id, { question });
      d.event(t, "question", { text: question });
      return text("Your question is recorded. End your turn now; the human's answer will be your next message.");
    },
  );

  server.registerTool(
    "finish",
    {
      description:
        "Say you are done, with a short summary of what you did and what is left. It is kept with the task for the human's review.",
      inputSchema: { summary: z.string().min(1).max(BOUNDS.finish.size) },
    },
    async ({ summary }) => {
      const { t, refused } = admitted("finish", "finish");
      if (refused) return refused;
      Runs.save(d.db, t.id, { summary });
      d.event(t, "finish", { summary });
      return text("Summary kept. End your turn.");
    },
  );

  server.registerTool(
    "memory_read",
    {
      description: "Read the project's memory: short notes about this project kept by agents and people.",
      annotations: { readOnlyHint: true },
    },
    async () => {
      const notes = Memory.within(d.db, Memory.BOUND);
      return text(notes.length ? notes.map((n) => `${n.id}. ${Memory.forAgent(n)}`).join("\n") : "The project's memory is empty.");
    },
  );

  server.registerTool(
    "memory_write",
    {
      description:
        "Add one short fact to the project's memory that future tasks should know (a convention, a pitfall, where something lives).",
      inputSchema: { note: z.string().min(1).max(Math.min(BOUNDS.memory_write.size, Memory.MAX_NOTE)) },
    },
    async ({ note }) => {
      const { t, refused } = admitted("memory_write", "write to the project's memory");
      if (refused) return refused;
      const n = Memory.add(d.db, note, "agent", t.id);
      d.event(t, "memory", { id: n.id, text: n.text });
      d.compact?.();
      return text(`Kept as note ${n.id}.`);
    },
  );
}
