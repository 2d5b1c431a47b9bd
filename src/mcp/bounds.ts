/**
 * What a caller of lazy's MCP route may make lazy write or start, bounded (issues 26 and 35):
 * the agent is hostile, and 10,000 `report_progress` calls in 1.7 s were 10,000 event rows;
 * 6,000 `finish` calls with 8,000-character summaries grew the store by 50 MB in 3.4 s; a
 * builder session made and started 12 tasks in 9 s. Every tool that writes to the store, to a
 * task's events or to memory, or that starts work, has one row in BOUNDS, and `take` is the one
 * check they all pass: at most `perTurn` calls in a task's turn (a builder session: in the
 * session), at most `perMinute` in any one minute (a fixed window from the first call), and the
 * text one call stores at most `size` characters (the tool's input schema). Past a bound the
 * call is a tool error the agent reads (the bound, and what to do instead), nothing is stored,
 * and lazy counts what it refused: one record per minute that had refusals, never one per call.
 *
 * Kept in memory: a daemon restart forgets the counts (at worst one more turn's worth).
 */

/** Tools of a task's agent that write (tools.ts). */
export type TaskTool = "report_progress" | "ask_human" | "finish" | "memory_write";
/** Tools of a builder session that write or start work (builder-tools.ts). */
export type BuilderTool = "task_create" | "task_start" | "task_send";
export type WritingTool = TaskTool | BuilderTool;

export interface Bound {
  /** Calls kept in one turn of the task (a builder's tools: in one builder session). */
  perTurn: number;
  /** Calls kept in any one minute. */
  perMinute: number;
  /** Characters of the text one call stores (its input schema refuses more). */
  size: number;
  /** A refusal's words: "a turn VERB at most N NOUN", "at most N NOUN a minute". */
  verb: string;
  noun: string;
  /** What the agent should do instead, said after the bound. */
  remedy: string;
}

/** Tasks one builder session may create, and start, unless lazy.toml's `[build] max_tasks` says otherwise. */
export const MAX_TASKS = 10;
/** Memory notes a task's agent may add in one turn (memory is for a few facts, not a log). */
export const MEMORY_PER_TURN = 5;
/** Progress notes a task's agent may store in one minute: a human reads them, a few a minute is plenty. */
export const PROGRESS_PER_MINUTE = 30;
export const WINDOW_MS = 60_000;
/** A builder's task prompt or message (util/prompt.ts bounds every prompt lower still than this for the CLI's). */
export const BUILDER_TEXT = 20_000;

/** The one table of what each writing tool may do. */
export const BOUNDS: Record<WritingTool, Bound> = {
  report_progress: {
    perTurn: 300,
    perMinute: PROGRESS_PER_MINUTE,
    size: 2000,
    verb: "shows",
    noun: "progress notes",
    remedy: "Report less often.",
  },
  ask_human: {
    perTurn: 3,
    perMinute: 3,
    size: 4000,
    verb: "asks",
    noun: "questions",
    remedy: "Put everything you need to know in one question, then end your turn: the human's answer will be your next message.",
  },
  finish: {
    perTurn: 3,
    perMinute: 3,
    size: 8000,
    verb: "keeps",
    noun: "summaries (finish calls)",
    remedy: "The summary you gave is kept: end your turn now.",
  },
  memory_write: {
    perTurn: MEMORY_PER_TURN,
    perMinute: MEMORY_PER_TURN,
    size: 2000,
    verb: "adds",
    noun: "notes to the project's memory",
    remedy: "Keep the most useful facts.",
  },
  task_create: {
    perTurn: MAX_TASKS,
    perMinute: 10,
    size: BUILDER_TEXT,
    verb: "creates",
    noun: "tasks",
    remedy: "Tell the person what else you would create; fewer, larger tasks go further.",
  },
  task_start: {
    perTurn: MAX_TASKS,
    perMinute: 10,
    size: 0,
    verb: "starts",
    noun: "tasks",
    remedy: "Tell the person which tasks are left to start (lazy start TASK).",
  },
  task_send: {
    perTurn: 50,
    perMinute: 10,
    size: BUILDER_TEXT,
    verb: "sends",
    noun: "messages to tasks",
    remedy: "Wait for the tasks' turns to end before sending more.",
  },
};

type Count = {
  /** The turn (or session) counted, and its calls kept. */
  turn: number | string;
  inTurn: number;
  /** Distinct units counted in this turn (task_start counts each task once). */
  units?: Set<string>;
  /** The current minute's window: when it began, calls kept and refused in it. */
  start: number;
  inMinute: number;
  refused: number;
  timer?: ReturnType<typeof setTimeout>;
};

export interface Take {
  /** The caller: a task's id, or `builder:<session>`. */
  key: string;
  tool: WritingTool;
  /** The task's turn, or the builder session's name: the per-turn count starts again when it changes. */
  turn: number | string;
  /** Counted once a turn however often it is taken (task_start: the task started). */
  unit?: string;
  /** The per-turn bound when it is not the table's (a builder's from `[build] max_tasks`). */
  perTurn?: number;
  /** Said after the per-turn bound: how a person raises it. */
  raise?: string;
}

export class Bounds {
  private counts = new Map<string, Count>();

  /** `flush`: a minute with refusals ended; record its count once (`bound`: the refusal's words). */
  constructor(
    private flush: (key: string, tool: WritingTool, refused: number) => void,
    private now = Date.now,
  ) {}

  /** May this call be kept? null when it may (and it is counted); else the refusal the agent reads, counted as refused. */
  take(t: Take): string | null {
    const b = BOUNDS[t.tool];
    const perTurn = t.perTurn ?? b.perTurn;
    const now = this.now();
    const id = `${t.key}\0${t.tool}`;
    let c = this.counts.get(id);
    if (!c) {
      c = { turn: t.turn, inTurn: 0, start: now, inMinute: 0, refused: 0 };
      this.counts.set(id, c);
    }
    if (c.turn !== t.turn) {
      c.turn = t.turn;
      c.inTurn = 0;
      c.units = undefined;
    }
    if (now - c.start >= WINDOW_MS && !c.timer) {
      c.start = now;
      c.inMinute = 0;
      c.refused = 0;
    }
    const per = typeof t.turn === "number" ? "turn" : "builder session";
    const again = t.unit !== undefined && c.units?.has(t.unit);
    let refusal: string | null = null;
    if (!again && c.inTurn >= perTurn)
      refusal = `Not done: a ${per} ${b.verb} at most ${perTurn} ${b.noun}${t.raise ? ` (${t.raise})` : ""}. ${b.remedy}`;
    else if (c.inMinute >= b.perMinute)
      refusal = `Not done: at most ${b.perMinute} ${b.noun} a minute (${c.refused + 1} refused this minute; lazy counts them). ${b.remedy}`;
    if (refusal) {
      this.refused(t.key, t.tool, c, now);
      return refusal;
    }
    c.inMinute++;
    if (!again) c.inTurn++;
    if (t.unit !== undefined) {
      c.units ??= new Set();
      c.units.add(t.unit);
    }
    return null;
  }

  /** Calls refused so far in this caller's current minute for this tool. */
  refusedNow(key: string, tool: WritingTool): number {
    return this.counts.get(`${key}\0${tool}`)?.refused ?? 0;
  }

  private refused(key: string, tool: WritingTool, c: Count, now: number): void {
    c.refused++;
    if (c.timer) return;
    c.timer = setTimeout(() => this.end(key, tool, c), Math.max(0, c.start + WINDOW_MS - now));
    c.timer.unref?.();
  }

  private end(key: string, tool: WritingTool, c: Count): void {
    const refused = c.refused;
    c.timer = undefined;
    c.start = this.now();
    c.inMinute = 0;
    c.refused = 0;
    try {
      this.flush(key, tool, refused);
    } catch {} // the task may be gone: its count goes with it
  }
}
