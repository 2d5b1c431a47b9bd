/**
 * What a notification says: the JSON body a webhook gets, built from one status move and the
 * task's record at the moment it moved. The agent wrote the message and (often) the reason,
 * so both are bounded here, once, before any channel sees them.
 */
import type { Database } from "bun:sqlite";
import type { StatusChange } from "../bus";
import { type Status, Tasks } from "../store";

export const EVENTS = ["waiting", "done", "failed"] as const;
export type Event = (typeof EVENTS)[number];

/** Longest message (and reason) a notification carries. */
export const TEXT_MAX = 2000;

export interface Notification {
  event: Event;
  task: { id: string; code: string | null; title: string; profile: string };
  status: Status;
  reason?: string;
  message?: string;
  at: string;
}

export const isEvent = (s: Status): s is Event => (EVENTS as readonly string[]).includes(s);

const str = (v: unknown) => (typeof v === "string" && v.trim() ? v : undefined);
export const bound = (s: string, max = TEXT_MAX) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/** The notification for a status move, or undefined when the move is not one lazy tells about. */
export function build(db: Database, c: StatusChange, now = new Date()): Notification | undefined {
  if (!isEvent(c.to)) return undefined;
  const task = Tasks.resolve(db, c.taskId);
  const reason = reasonOf(c.to, c.data);
  // The turn's result is the agent's summary of it; a stopped or failed turn may have none,
  // and then its last message says where it got to.
  const result = str(c.data.result);
  const last = str(Tasks.lastEvent(db, task.id, "message")?.data.text);
  const message = c.to === "done" ? (result ?? last) : (last ?? result);
  return {
    event: c.to,
    task: { id: task.id, code: task.code, title: task.title, profile: task.profile },
    status: c.to,
    ...(reason ? { reason: bound(reason) } : {}),
    ...(message ? { message: bound(message) } : {}),
    at: now.toISOString(),
  };
}

function reasonOf(to: Event, data: Record<string, unknown>): string | undefined {
  if (to === "done") return undefined;
  // A move that names its reason (a held turn's "usage_pause", "budget") may say more in `detail`.
  const named = str(data.reason);
  if (named) return str(data.detail) ? `${named}: ${data.detail}` : named;
  if (to === "waiting") return data.stopped ? "stopped by the user (lazy stop)" : "waiting for a human";
  const error = str(data.error);
  if (error) return error;
  if (typeof data.signal === "string") return `the agent was ended by ${data.signal}`;
  if (typeof data.exit === "number" && data.exit !== 0) return `the agent exited with code ${data.exit}`;
  return "the agent reported that its turn failed";
}
