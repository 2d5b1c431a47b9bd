/**
 * Project memory: short notes about the project that agents (through the MCP tools) and
 * people (lazy memory, the dashboard) keep, handed to each new task's agent within a bound. Who
 * wrote a note is lazy's record (the task an MCP token belongs to, or "human"), never what the
 * note says: `human` is a person's, `agent` a task's agent's, `lazy` lazy's compaction of agents'
 * notes. A person's note is never compacted, and is handed over before any agent's.
 */
import type { Database } from "bun:sqlite";
import { LazyError } from "../util/errors";

/** Who wrote a note: a person is trusted; an agent's note (or lazy's compaction of them) is not verified. */
export const byPerson = (n: Pick<Note, "by">): boolean => n.by === "human";

/** Line breaks of every kind: an agent's note is handed over on one line, after its mark. */
const LINE_BREAKS = /[\r\n\v\f\u0085\u2028\u2029]+/g;

/**
 * A note as an agent reads it (the prompt block, memory_read): agents' notes marked unverified,
 * on one line, so a note cannot start a line of its own that reads as a person's note.
 */
export const forAgent = (n: Pick<Note, "by" | "text">): string =>
  byPerson(n) ? n.text : `(unverified, written by an agent) ${n.text.replace(LINE_BREAKS, " ⏎ ")}`;

export interface Note {
  id: number;
  at: string;
  text: string;
  taskId: string | null;
  by: "agent" | "human" | "lazy";
}

/** A note's longest text: memory is for short facts, not documents. */
export const MAX_NOTE = 2_000;

/** What memory hands an agent at most, in characters; past it, memory is compacted. */
export const BOUND = 8_000;

type Row = { id: number; at: number; text: string; task_id: string | null; by: string };
const toNote = (r: Row): Note => ({ id: r.id, at: new Date(r.at).toISOString(), text: r.text, taskId: r.task_id, by: r.by as Note["by"] });

export function add(db: Database, text: string, by: Note["by"], taskId: string | null = null, now = Date.now()): Note {
  const t = text.trim();
  if (!t) throw new LazyError("invalid_input", "A memory note needs some text.");
  if (t.length > MAX_NOTE)
    throw new LazyError("invalid_input", `A memory note is at most ${MAX_NOTE} characters (this one is ${t.length}); keep it to one fact.`);
  const r = db.query("INSERT INTO memory (at, text, task_id, by) VALUES (?, ?, ?, ?) RETURNING *").get(now, t, taskId, by) as Row;
  return toNote(r);
}

export function list(db: Database): Note[] {
  return (db.query("SELECT * FROM memory ORDER BY id").all() as Row[]).map(toNote);
}

export function remove(db: Database, id: number): Note {
  const r = db.query("DELETE FROM memory WHERE id = ? RETURNING *").get(id) as Row | null;
  if (!r) throw new LazyError("not_found", `No memory note ${id}: lazy memory lists them with their numbers.`);
  return toNote(r);
}

/**
 * The notes that fit in `bound` characters (what an agent is handed), in order: people's notes
 * first (newest first), then agents' in the room left, so no flood of agents' notes pushes a
 * person's out.
 */
export function within(db: Database, bound: number): Note[] {
  const out: Note[] = [];
  let used = 0;
  const all = (db.query("SELECT * FROM memory ORDER BY id DESC").all() as Row[]).map(toNote);
  for (const person of [true, false])
    for (const n of all) {
      if (byPerson(n) !== person) continue;
      if (used + n.text.length + 3 > bound) break;
      used += n.text.length + 3;
      out.push(n);
    }
  return out.sort((a, b) => a.id - b.id);
}

/** Characters all notes take, to tell when memory has passed its bound (and wants compacting). */
export function size(db: Database): number {
  return (db.query("SELECT COALESCE(SUM(LENGTH(text) + 3), 0) AS n FROM memory").get() as { n: number }).n;
}

/** The notes a compaction may rewrite: agents' and earlier compactions of them, never a person's. */
export function compactable(db: Database): Note[] {
  return (db.query("SELECT * FROM memory WHERE by != 'human' ORDER BY id").all() as Row[]).map(toNote);
}

/**
 * Replace the compactable notes up to `upTo` by `texts` (a compaction), in one transaction:
 * either the compacted notes are stored and the old ones gone, or nothing changed. Notes added
 * meanwhile (above `upTo`) stay, and a person's note is never touched.
 */
export function replaceUpTo(db: Database, upTo: number, texts: string[], now = Date.now()): void {
  db.transaction(() => {
    db.query("DELETE FROM memory WHERE id <= ? AND by != 'human'").run(upTo);
    for (const t of texts) add(db, t, "lazy", null, now);
  }).immediate();
}
