/**
 * Task statuses and the moves between them, written down once. The daemon refuses any other
 * move; the CLI, the dashboard and agents all see the same rules because they all ask it.
 *
 *   queued → running → done (turn finished, to review) | waiting (needs a human) | failed
 *   queued → failed (its first launch was refused before anything ran: the reason is recorded)
 *   queued | done | failed → waiting ([usage_pause] holds its next turn until the window resets)
 *   done | waiting | failed → queued ([limits] max_running turns run already: its next turn
 *     starts when one ends, in order; a task never started waits as `queued` the same way)
 *   done | waiting | failed → running (the next turn; a failed turn can be retried)
 *   done | waiting → accepted (merged)
 *   queued | done | waiting | failed → rejected | closed (the session ends unmerged)
 */
export const STATUSES = ["queued", "running", "done", "waiting", "failed", "accepted", "rejected", "closed"] as const;
export type Status = (typeof STATUSES)[number];

const moves: Record<Status, readonly Status[]> = {
  queued: ["running", "failed", "waiting", "rejected", "closed"],
  running: ["done", "waiting", "failed"],
  done: ["running", "queued", "waiting", "accepted", "rejected", "closed"],
  waiting: ["running", "queued", "accepted", "rejected", "closed"],
  failed: ["running", "queued", "waiting", "rejected", "closed"],
  accepted: [],
  rejected: [],
  closed: [],
};

export const canMove = (from: Status, to: Status) => moves[from].includes(to);
export const allowedFrom = (from: Status): readonly Status[] => moves[from];
/** The session has ended: grants and tokens are revoked, nothing runs again. */
export const isFinal = (s: Status) => moves[s].length === 0;
export const isStatus = (s: string): s is Status => (STATUSES as readonly string[]).includes(s);

/** What a person can ask of a task: the dashboard's buttons and forms. */
export type Action = "start" | "send" | "stop" | "accept" | "reject" | "close" | "budget";

/**
 * The actions the rules above allow from a status, so the dashboard offers only those (the
 * daemon still refuses any other, in the CLI's words). Start runs a turn from the task's prompt;
 * send runs one with a message, so it needs a turn before it; stop needs one running.
 */
export function actions(s: Status): Action[] {
  const out: Action[] = [];
  if (canMove(s, "running")) out.push("start");
  if (canMove(s, "running") && s !== "queued") out.push("send");
  if (s === "running") out.push("stop");
  if (canMove(s, "accepted")) out.push("accept");
  if (canMove(s, "rejected")) out.push("reject");
  if (canMove(s, "closed")) out.push("close");
  if (!isFinal(s)) out.push("budget");
  return out;
}
