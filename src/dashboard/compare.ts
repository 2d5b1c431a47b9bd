/**
 * A best-of-N group side by side, for `lazy compare G` and the dashboard's group page alike:
 * each candidate's status, the diffstat of its branch, the [review] check's verdict on its
 * current tip, tokens and cost from lazy's own counters (the proxy's audit, per task: never
 * what the agent says it spent), and wall time (the time its turns ran, from its status events).
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import * as Git from "../git";
import { spentByTask } from "../spending";
import { type Task, type TaskEvent, Tasks } from "../store";
import { taskDiff } from "./diff";

export interface Verdict {
  ok: boolean;
  code: number;
  command: string;
  at: string;
  ms: number;
  /** The tail of what it printed. */
  output: string;
  error: string | null;
}

export interface Candidate {
  id: string;
  code: string | null;
  profile: string;
  status: Task["status"];
  branch: string;
  tip: string | null;
  diffstat: { files: number; added: number; removed: number };
  /** The check's verdict on the branch's current tip; null when none ran on it. */
  check: Verdict | null;
  /** Why there is no verdict, when there is none. */
  checkNote: string | null;
  tokens: number;
  requests: number;
  /** Dollars, priced by the models served (null when one has no price: `unpriced` names it). */
  usd: number | null;
  knownUsd: number;
  unpriced: string[];
  /** Milliseconds its turns ran (a running turn counts to now). */
  wallMs: number;
  /** The agent's finish summary, or its last message (first 240 characters). */
  summary: string | null;
}

export interface Comparison {
  group: string;
  title: string;
  prompt: string;
  /** The command lazy.toml names ([review] check), or null. */
  check: string | null;
  candidates: Candidate[];
}

/** Milliseconds in `running`, summed over the status events (the last one to `now` while it runs). */
export function wallTime(events: readonly Pick<TaskEvent, "at" | "kind" | "data">[], now = Date.now()): number {
  let total = 0;
  let since: number | null = null;
  for (const e of events) {
    if (e.kind !== "status") continue;
    const at = Date.parse(e.at);
    if (e.data.to === "running") since ??= at;
    else if (e.data.from === "running" && since !== null) {
      total += at - since;
      since = null;
    }
  }
  return since === null ? total : total + (now - since);
}

export async function compare(db: Database, config: Config, root: string, group: string, tasks: readonly Task[]): Promise<Comparison> {
  const candidates: Candidate[] = [];
  for (const t of tasks) {
    const ref = t.code ?? t.id;
    const merged = t.status === "accepted" ? Tasks.lastEvent(db, t.id, "summary")?.data.merge : undefined;
    const d = await taskDiff(root, ref, typeof merged === "string" && /^[0-9a-f]{40,64}$/.test(merged) ? merged : undefined, {
      stat: true,
    });
    const events = Tasks.events(db, t.id).filter((e) => e.kind === "status" || e.kind === "check");
    const last = Tasks.lastEvent(db, t.id, "check");
    // The branch's own tip (an accepted task's diff is its merge's; its branch stays).
    const tip =
      Git.git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${d.branch}^{commit}`], { allowFail: true }).out.trim() || null;
    const fresh = !!last && !!tip && last.data.tip === tip && last.data.command === config.review.check;
    const s = spentByTask(db, config, t.id);
    const finish = Tasks.lastEvent(db, t.id, "finish")?.data.summary ?? Tasks.lastEvent(db, t.id, "message")?.data.text;
    candidates.push({
      id: t.id,
      code: t.code,
      profile: t.profile,
      status: t.status,
      branch: d.branch,
      tip,
      diffstat: d.total,
      check:
        fresh && last
          ? {
              ok: last.data.ok === true,
              code: Number(last.data.code),
              command: String(last.data.command),
              at: last.at,
              ms: Number(last.data.ms) || 0,
              output: String(last.data.output ?? ""),
              error: typeof last.data.error === "string" ? last.data.error : null,
            }
          : null,
      checkNote: !config.review.check
        ? "no [review] check in lazy.toml"
        : fresh
          ? null
          : t.status === "running" || t.status === "queued"
            ? `not run: it is ${t.status}`
            : t.status === "accepted" || t.status === "rejected" || t.status === "closed"
              ? `not run: it is ${t.status} (its worktree is gone)`
              : tip
                ? "not run on this tip yet (lazy compare runs it)"
                : "not run: no branch yet",
      tokens: s.tokens,
      requests: s.requests,
      usd: s.usd,
      knownUsd: s.knownUsd,
      unpriced: s.unpriced,
      wallMs: wallTime(events),
      summary: typeof finish === "string" ? finish.slice(0, 240) : null,
    });
  }
  const first = tasks[0];
  return { group, title: first?.title ?? group, prompt: first?.prompt ?? "", check: config.review.check ?? null, candidates };
}
