/**
 * Tasks and their events in SQLite. The daemon is the only writer: every write is a tiny
 * IMMEDIATE transaction (a deferred one that reads then writes fails with BUSY_SNAPSHOT).
 */
import type { Database } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { z } from "zod";
import { LazyError } from "../util/errors";
import { allowedFrom, canMove, isStatus, STATUSES, type Status } from "./status";

export const Task = z.object({
  id: z.string().describe("Hex id; any unique prefix of at least 4 characters refers to it."),
  code: z.string().nullable().describe("Optional unique handle, matched exactly."),
  title: z.string(),
  prompt: z.string(),
  status: z.enum(STATUSES),
  profile: z.string().describe("Agent profile the task runs on."),
  group: z.string().nullable().describe("The best-of-N group it is a candidate of (lazy compare G), or null."),
  createdAt: z.string().describe("ISO time."),
  updatedAt: z.string().describe("ISO time."),
});
export type Task = z.infer<typeof Task>;

export const TaskEvent = z.object({
  id: z.number(),
  taskId: z.string(),
  at: z.string(),
  kind: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type TaskEvent = z.infer<typeof TaskEvent>;

export const CODE_RE = /^[a-z0-9][a-z0-9._-]{0,47}$/;
const HEX_RE = /^[0-9a-f]+$/;
export const MIN_PREFIX = 4;

type Row = {
  id: string;
  code: string | null;
  title: string;
  prompt: string;
  status: string;
  profile: string;
  grp: string | null;
  created_at: number;
  updated_at: number;
};

const toTask = (r: Row): Task => ({
  id: r.id,
  code: r.code,
  title: r.title,
  prompt: r.prompt,
  status: isStatus(r.status) ? r.status : "failed",
  profile: r.profile,
  group: r.grp ?? null,
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

export function validateCode(code: string): void {
  if (!CODE_RE.test(code))
    throw new LazyError(
      "invalid_input",
      `Task code "${code}" is not valid: use lowercase letters, digits, ".", "_" and "-", starting with a letter or digit.`,
    );
  if (HEX_RE.test(code))
    throw new LazyError(
      "invalid_input",
      `Task code "${code}" looks like a hex task id; add a letter outside a–f or a "-" (e.g. "${code}-task").`,
    );
}

export interface NewTask {
  prompt: string;
  title?: string;
  code?: string;
  profile: string;
  group?: string;
}

export function add(db: Database, input: NewTask, now = Date.now()): Task {
  return addMany(db, [input], now)[0]!;
}

/** Several tasks in one transaction (a best-of-N group's candidates): all of them, or none. */
export function addMany(db: Database, inputs: readonly NewTask[], now = Date.now()): Task[] {
  for (const input of inputs) {
    if (!input.prompt.trim()) throw new LazyError("invalid_input", 'A task needs a prompt: lazy task add "what to do".');
    if (input.code !== undefined) validateCode(input.code);
  }
  return db
    .transaction(() =>
      inputs.map((input) => {
        const prompt = input.prompt.trim();
        const title = (input.title?.trim() || firstLine(prompt)).slice(0, 120);
        if (input.code !== undefined && db.query("SELECT 1 FROM tasks WHERE code = ?").get(input.code))
          throw new LazyError("conflict", `A task with code "${input.code}" already exists; pick another code.`);
        let id = "";
        do id = randomBytes(4).toString("hex");
        while (db.query("SELECT 1 FROM tasks WHERE id = ?").get(id));
        db.query(
          "INSERT INTO tasks (id, code, title, prompt, status, profile, grp, created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
        ).run(id, input.code ?? null, title, prompt, input.profile, input.group ?? null, now, now);
        db.query("INSERT INTO events (task_id, at, kind, data) VALUES (?, ?, 'created', ?)").run(
          id,
          now,
          JSON.stringify({ status: "queued", ...(input.group ? { group: input.group } : {}) }),
        );
        return toTask(db.query("SELECT * FROM tasks WHERE id = ?").get(id) as Row);
      }),
    )
    .immediate();
}

/** A group's candidates, oldest first (empty: no such group). */
export function inGroup(db: Database, group: string): Task[] {
  return (db.query("SELECT * FROM tasks WHERE grp = ? ORDER BY rowid").all(group) as Row[]).map(toTask);
}

export function list(db: Database, filter: { status?: Status } = {}): Task[] {
  const rows = filter.status
    ? (db.query("SELECT * FROM tasks WHERE status = ? ORDER BY created_at, id").all(filter.status) as Row[])
    : (db.query("SELECT * FROM tasks ORDER BY created_at, id").all() as Row[]);
  return rows.map(toTask);
}

/** A page of the task list (the dashboard's): newest first, by status, by text, and where the last page ended. */
export interface PageQuery {
  status?: Status;
  /** Words the title, prompt, code or id contain (case-insensitive). */
  q?: string;
  /** The `next` of the page before; absent: the newest. */
  before?: string;
  limit?: number;
}

const CURSOR_RE = /^(\d{1,15}):([0-9a-f]{1,32})$/;

/**
 * Keyset paging over (created_at, id), so page 200 of 10,000 tasks costs what page 1 does
 * (indexes tasks_created, tasks_status_created); `total` counts what the filter matches.
 */
export function page(db: Database, query: PageQuery = {}): { tasks: Task[]; total: number; next: string | null } {
  const limit = Math.min(200, Math.max(1, Math.floor(query.limit ?? 50)));
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (query.status) {
    where.push("status = ?");
    params.push(query.status);
  }
  for (const word of (query.q ?? "").trim().split(/\s+/).filter(Boolean).slice(0, 8)) {
    const like = `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push("(title LIKE ? ESCAPE '\\' OR prompt LIKE ? ESCAPE '\\' OR code LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')");
    params.push(like, like, like, like);
  }
  const total = (
    db.query(`SELECT COUNT(*) AS n FROM tasks${where.length ? ` WHERE ${where.join(" AND ")}` : ""}`).get(...params) as { n: number }
  ).n;
  if (query.before !== undefined) {
    const m = CURSOR_RE.exec(query.before);
    if (!m) throw new LazyError("invalid_input", `"${query.before}" is not a page of the task list; start again from the first page.`);
    where.push("(created_at < ? OR (created_at = ? AND id < ?))");
    params.push(Number(m[1]), Number(m[1]), m[2]!);
  }
  const rows = db
    .query(`SELECT * FROM tasks${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT ?`)
    .all(...params, limit + 1) as Row[];
  const more = rows.length > limit;
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { tasks: shown.map(toTask), total, next: more && last ? `${last.created_at}:${last.id}` : null };
}

/** Each task's newest event of `kind` (a message, a status change), for a page of tasks. */
export function latest(db: Database, taskIds: readonly string[], kind: string): Map<string, TaskEvent> {
  const out = new Map<string, TaskEvent>();
  const q = db.query("SELECT * FROM events WHERE task_id = ? AND kind = ? ORDER BY id DESC LIMIT 1");
  for (const id of taskIds) {
    const e = q.get(id, kind) as { id: number; task_id: string; at: number; kind: string; data: string } | null;
    if (e) out.set(id, { id: e.id, taskId: e.task_id, at: new Date(e.at).toISOString(), kind: e.kind, data: JSON.parse(e.data) });
  }
  return out;
}

export function counts(db: Database): Record<Status, number> {
  const out = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<Status, number>;
  for (const r of db.query("SELECT status, COUNT(*) AS n FROM tasks GROUP BY status").all() as { status: string; n: number }[])
    if (isStatus(r.status)) out[r.status] = r.n;
  return out;
}

/**
 * A task reference: a code, matched exactly (fix-login never matches fix-login-2), or a hex
 * id prefix of at least 4 characters; an ambiguous prefix names the candidates.
 */
/** A task's code by its whole id (null: it has none, or there is no such task). */
export function codeOf(db: Database, id: string): string | null {
  return (db.query("SELECT code FROM tasks WHERE id = ?").get(id) as { code: string | null } | null)?.code ?? null;
}

/** A task by its whole id (the primary key), or undefined. */
export function byId(db: Database, id: string): Task | undefined {
  const row = db.query("SELECT * FROM tasks WHERE id = ?").get(id) as Row | null;
  return row ? toTask(row) : undefined;
}

export function resolve(db: Database, ref: string): Task {
  const r = ref.trim();
  if (!r) throw new LazyError("invalid_input", "Name a task by its code or by at least 4 characters of its hex id.");
  const byCode = db.query("SELECT * FROM tasks WHERE code = ?").get(r) as Row | null;
  if (byCode) return toTask(byCode);
  // A whole id is found by the primary key (LIKE 'x%' cannot use it: a scan of every task).
  const exact = HEX_RE.test(r) ? byId(db, r) : undefined;
  if (exact) return exact;
  if (HEX_RE.test(r)) {
    if (r.length < MIN_PREFIX)
      throw new LazyError("invalid_input", `"${r}" is too short to name a task: give at least ${MIN_PREFIX} characters of its hex id.`);
    const rows = db.query("SELECT * FROM tasks WHERE id LIKE ? ORDER BY created_at LIMIT 11").all(`${r}%`) as Row[];
    if (rows.length === 1) return toTask(rows[0]!);
    if (rows.length > 1)
      throw new LazyError(
        "ambiguous",
        `"${r}" matches ${rows.length > 10 ? "more than 10" : rows.length} tasks; give more of the id.`,
        rows.slice(0, 10).map((x) => `${x.id}${x.code ? ` (${x.code})` : ""}  ${x.title}`),
      );
  }
  throw new LazyError("not_found", `No task "${r}": see lazy task list for codes and ids.`);
}

/**
 * A task filter (--task, ?task=), by the docs' rules: each ref resolves as `resolve` does (a
 * code exactly, a hex id by a prefix of at least 4); a filter that names no task — an empty
 * string, an empty list — is refused, never read as "everything". null (no filter) is null.
 */
export function resolveFilter(db: Database, refs: readonly string[] | null): Task[] | null {
  if (refs === null) return null;
  if (!refs.length || refs.some((r) => !r.trim()))
    throw new LazyError("invalid_input", "An empty task filter names no task; give a code or an id prefix, or leave --task out.");
  const seen = new Map<string, Task>();
  for (const r of refs) {
    const t = resolve(db, r);
    seen.set(t.id, t);
  }
  return [...seen.values()];
}

/** A task's events after event id `afterId`, oldest first: `limit` of them at most (-1: all). */
export function events(db: Database, taskId: string, afterId = 0, limit = -1): TaskEvent[] {
  return (
    db.query("SELECT * FROM events WHERE task_id = ? AND id > ? ORDER BY id LIMIT ?").all(taskId, afterId, limit) as {
      id: number;
      task_id: string;
      at: number;
      kind: string;
      data: string;
    }[]
  ).map((e) => ({ id: e.id, taskId: e.task_id, at: new Date(e.at).toISOString(), kind: e.kind, data: JSON.parse(e.data) }));
}

/**
 * Events of every task (or of `taskIds`) after event id `after` and at or after `since` (ms),
 * oldest first, with the task's code: the feed `lazy watch` and the dashboard follow.
 */
export function feed(
  db: Database,
  opts: { after?: number; since?: number; taskIds?: readonly string[] | null; limit?: number },
): (TaskEvent & { code: string | null })[] {
  const ids = opts.taskIds ?? null;
  const where = ["e.id > ?", "e.at >= ?"];
  const params: (string | number)[] = [opts.after ?? 0, opts.since ?? 0];
  if (ids) {
    where.push(`e.task_id IN (${ids.map(() => "?").join(",") || "NULL"})`);
    params.push(...ids);
  }
  params.push(opts.limit ?? 10_000);
  const rows = db
    .query(`SELECT e.*, t.code AS code FROM events e JOIN tasks t ON t.id = e.task_id WHERE ${where.join(" AND ")} ORDER BY e.id LIMIT ?`)
    .all(...params) as { id: number; task_id: string; at: number; kind: string; data: string; code: string | null }[];
  return rows.map((e) => ({
    id: e.id,
    taskId: e.task_id,
    at: new Date(e.at).toISOString(),
    kind: e.kind,
    data: JSON.parse(e.data),
    code: e.code,
  }));
}

/**
 * The events of the task's latest turn, from its move to `running` on, oldest first, at most
 * `limit` (what the OpenTelemetry export makes a turn's spans of: src/telemetry).
 */
export function turnEvents(db: Database, taskId: string, limit = 20_000): TaskEvent[] {
  return (
    db
      .query(
        `SELECT * FROM events WHERE task_id = ?1 AND id >= (
           SELECT COALESCE(MAX(id), 0) FROM events WHERE task_id = ?1 AND kind = 'status' AND json_extract(data, '$.to') = 'running'
         ) ORDER BY id LIMIT ?2`,
      )
      .all(taskId, limit) as { id: number; task_id: string; at: number; kind: string; data: string }[]
  ).map((e) => ({ id: e.id, taskId: e.task_id, at: new Date(e.at).toISOString(), kind: e.kind, data: JSON.parse(e.data) }));
}

/** The newest event id (0 when there is none). */
export function lastEventId(db: Database): number {
  return (db.query("SELECT COALESCE(MAX(id), 0) AS n FROM events").get() as { n: number }).n;
}

/** The task's newest event of one kind (its last agent message, say), read backwards on the task's index. */
export function lastEvent(db: Database, taskId: string, kind: string): TaskEvent | undefined {
  const e = db.query("SELECT * FROM events WHERE task_id = ? AND kind = ? ORDER BY id DESC LIMIT 1").get(taskId, kind) as {
    id: number;
    task_id: string;
    at: number;
    kind: string;
    data: string;
  } | null;
  return e ? { id: e.id, taskId: e.task_id, at: new Date(e.at).toISOString(), kind: e.kind, data: JSON.parse(e.data) } : undefined;
}

export function addEvent(db: Database, taskId: string, kind: string, data: Record<string, unknown> = {}, now = Date.now()): void {
  db.query("INSERT INTO events (task_id, at, kind, data) VALUES (?, ?, ?, ?)").run(taskId, now, kind, JSON.stringify(data));
}

/** Move a task to another status, by the rules in status.ts, recording the move as an event. */
export function move(db: Database, id: string, to: Status, data: Record<string, unknown> = {}, now = Date.now()): Task {
  return db
    .transaction(() => {
      const row = db.query("SELECT * FROM tasks WHERE id = ?").get(id) as Row | null;
      if (!row) throw new LazyError("not_found", `No task ${id}.`);
      const from = row.status as Status;
      if (!canMove(from, to)) {
        const allowed = allowedFrom(from);
        throw new LazyError(
          "conflict",
          `Task ${row.code ?? row.id} is ${from}; it can move to ${allowed.length ? allowed.join(", ") : "nothing (its session has ended)"}, not ${to}.`,
        );
      }
      db.query("UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?").run(to, now, id);
      addEvent(db, id, "status", { from, to, ...data }, now);
      return toTask(db.query("SELECT * FROM tasks WHERE id = ?").get(id) as Row);
    })
    .immediate();
}

function firstLine(s: string): string {
  const line = s.split("\n").find((l) => l.trim()) ?? s;
  return line.trim().length > 72 ? `${line.trim().slice(0, 71)}…` : line.trim();
}
