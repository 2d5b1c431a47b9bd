/**
 * A best-of-N group side by side, for `lazy compare G` and the dashboard's group page alike:
 * each candidate's status, the diffstat of its branch, the [review] check's verdict on its
 * current tip, tokens and cost from lazy's own counters (the proxy's audit, per task: never
 * what the agent says it spent), and wall time (the time its turns ran, from its status events).
 */
import type { Database } from "bun:sqlite";
import type { Config } from "../config";
import { taskDiff } from "../diff";
import * as Git from "../git";
import { spentByTask } from "../spending";
import { GroupChecks, type Task, type TaskEvent, Tasks } from "../store";

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
  /** The check's verdict on the untouched base the candidates forked from (this command, this base); null when none ran. */
  base: (Verdict & { commit: string }) | null;
  /** What the base's verdict means for the candidates' ("the check passes on the base too: …"), or why there is none. */
  baseNote: string | null;
  candidates: Candidate[];
  /** The candidate "Keep one" points at (rank's first), or null: `keepNote` says why. */
  keep: string | null;
  keepNote: string | null;
}

/** Said wherever a check passes on the untouched base: its pass is no candidate's. */
export const BASE_PASSES = "the check passes on the base too: it does not tell candidates apart";

/** Whether a candidate's check counts as a pass: it passed on its tip, and it does not pass on the base too. */
export function counts(c: Pick<Comparison, "base">, x: Pick<Candidate, "check">): boolean {
  return x.check?.ok === true && c.base?.ok !== true;
}

/**
 * The candidates one could keep, best first: finished (done, or waiting for the person) and
 * changed at least one file; a counted check pass before no verdict before a failed check, then
 * fewer tokens, then the group's order.
 */
export function rank(c: Pick<Comparison, "base" | "candidates">): Candidate[] {
  const score = (x: Candidate) => (counts(c, x) ? 0 : x.check && !x.check.ok ? 2 : 1);
  return c.candidates
    .map((x, i) => ({ x, i }))
    .filter(({ x }) => (x.status === "done" || x.status === "waiting") && x.diffstat.files > 0)
    .sort((p, q) => score(p.x) - score(q.x) || p.x.tokens - q.x.tokens || p.i - q.i)
    .map(({ x }) => x);
}

/** Why no candidate can be kept (rank found none). */
function keepNote(candidates: readonly Candidate[]): string {
  const open = candidates.filter((x) => x.status === "done" || x.status === "waiting");
  if (!open.length) return "no candidate has finished: nothing to keep yet";
  return "no finished candidate changed a file: nothing to keep";
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
  const base = baseVerdict(db, config, root, group, candidates);
  const best = rank({ base: base.verdict, candidates })[0];
  return {
    group,
    title: first?.title ?? group,
    prompt: first?.prompt ?? "",
    check: config.review.check ?? null,
    base: base.verdict,
    baseNote: base.note,
    candidates,
    keep: best ? (best.code ?? best.id) : null,
    keepNote: best ? null : keepNote(candidates),
  };
}

/** The check's stored verdict on the group's base, when it judged this base with this command. */
function baseVerdict(
  db: Database,
  config: Config,
  root: string,
  group: string,
  candidates: readonly Candidate[],
): { verdict: Comparison["base"]; note: string | null } {
  const command = config.review.check;
  if (!command) return { verdict: null, note: null };
  const tips = candidates.map((x) => x.tip).filter((t): t is string => !!t);
  const at = tips.length ? Git.git(root, ["merge-base", "--octopus", "HEAD", ...tips], { allowFail: true }).out.trim() : "";
  const v = GroupChecks.get(db, group);
  if (!at || !v || v.base !== at || v.command !== command)
    return { verdict: null, note: tips.length ? "not run on the base yet (lazy compare runs it)" : null };
  return {
    verdict: { ok: v.ok, code: v.code, command: v.command, at: v.at, ms: v.ms, output: v.output, error: v.error, commit: v.base },
    note: v.ok ? BASE_PASSES : null,
  };
}
