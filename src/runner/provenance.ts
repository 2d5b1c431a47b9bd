/**
 * A turn's trace records (src/provenance), from what lazy itself kept of the turn: its tool
 * calls (the stored `tool` events, inputs as lazy logs shows them), its model calls (the audit's
 * rows, with the model served), what asked for it (the task's prompt, or the person's message:
 * a lazy send or a review), the profile it ran on. The task's secrets (its grants) are handed
 * over to be cut from every string. The audit is waited for a bounded time: a record without
 * its model calls beats a turn that does not end.
 */
import type { Database } from "bun:sqlite";
import { type Config, resolveProfile } from "../config";
import * as Git from "../git";
import * as Provenance from "../provenance";
import type { ModelProxy } from "../proxy";
import * as Review from "../review";
import { Runs, type Task, Tasks } from "../store";
import type { Logger } from "../util/log";

export interface TraceDeps {
  root: string;
  db: Database;
  log: Logger;
  config: () => Config;
  proxy: Pick<ModelProxy, "audit" | "grants">;
}

/** How long the turn's end waits for the audit's rows to be written. */
const AUDIT_WAIT_MS = 3_000;
/** Model calls one turn's records name at most (the newest). */
const MAX_CALLS = 5_000;

/** The facts of turn `turn` of `task`, as the records need them. */
export async function turnFacts(d: TraceDeps, task: Task, turn: number): Promise<Provenance.TurnFacts> {
  const events = Tasks.events(d.db, task.id);
  let start = events.findLastIndex((e) => e.kind === "status" && e.data.to === "running" && e.data.turn === turn);
  if (start < 0) start = events.findLastIndex((e) => e.kind === "status" && e.data.to === "running");
  const began = start >= 0 ? Date.parse(events[start]!.at) : 0;
  // The turn's own events: up to the next turn's start, should one have begun meanwhile.
  let end = events.findIndex((e, i) => i > start && e.kind === "status" && e.data.to === "running");
  if (end < 0) end = events.length;
  const tools: Provenance.ToolCall[] = [];
  for (const e of events.slice(start + 1, end))
    if (e.kind === "tool")
      tools.push({
        id: typeof e.data.id === "string" ? e.data.id : null,
        name: String(e.data.name ?? "tool"),
        input: String(e.data.input ?? ""),
        at: Date.parse(e.at),
      });
  const message = start >= 0 ? events[start]!.data.message : undefined;
  const asked: Provenance.TurnFacts["asked"] =
    typeof message === "string"
      ? { kind: Review.isReview(message) ? "review" : "send", text: message }
      : turn === 1
        ? { kind: "task", text: task.prompt }
        : null;
  let timer: Timer | undefined;
  const rows = await Promise.race([
    d.proxy.audit.query({ taskId: task.id, since: began, limit: MAX_CALLS }),
    new Promise<[]>((resolve) => {
      timer = setTimeout(() => {
        d.log.warn(
          `task ${task.code ?? task.id}: the audit's rows of turn ${turn} were not written within ${AUDIT_WAIT_MS} ms; its trace records name no model call`,
        );
        resolve([]);
      }, AUDIT_WAIT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  const calls = rows
    .filter((r) => r.role !== "broker" && (r.modelServed || r.modelAsked))
    .map((r) => ({ id: r.id, at: r.at, served: r.modelServed ?? null, asked: r.modelAsked ?? null }));
  const config = d.config();
  const profile = resolveProfile(config, Runs.find(d.db, task.id)?.profile ?? task.profile);
  return {
    task: { id: task.id, code: task.code, title: task.title },
    turn,
    harness: profile.harness,
    profile: profile.name,
    wire: profile.wire,
    tools,
    calls,
    asked,
    prompts: config.provenance.prompts,
    cut: { secrets: d.proxy.grants.secretsOf(task.id) },
  };
}

/**
 * Write the records of the turn's new commits (from..to on lazy/<task>); what could not be is
 * logged. The commits are asked first: a turn without one loads no events and waits on no audit.
 */
export async function traceTurn(d: TraceDeps, task: Task, turn: number, from: string, to: string): Promise<void> {
  const t0 = performance.now();
  let t1 = t0;
  const r = await Provenance.writeTurn(d.root, `${Git.BRANCH_PREFIX}${task.code ?? task.id}`, from, to, async () => {
    const facts = await turnFacts(d, task, turn);
    t1 = performance.now();
    return facts;
  });
  if (!r.commits) return;
  const ref = task.code ?? task.id;
  if (r.skipped.length)
    d.log.warn(
      `task ${ref}: some trace records were not written or were cut: ${r.skipped.slice(0, 5).join("; ")}${r.skipped.length > 5 ? ` (and ${r.skipped.length - 5} more)` : ""}`,
    );
  d.log.info(
    `task ${ref}: ${r.written.length} trace record(s) under ${Provenance.NOTES_REF} (gathering ${(t1 - t0).toFixed(1)} ms, writing ${(performance.now() - t1).toFixed(1)} ms)`,
  );
}

/**
 * Delete a task's branch (lazy reject), and with it the records of its commits that no other
 * ref holds (not merged by an accept, not on a person's branch or tag): work that no longer
 * exists. Those commits are found before the branch goes, their notes dropped (one notes commit)
 * only once it is gone. Accepted work keeps its records (the branch it was merged to holds it).
 */
export async function deleteBranch(d: Pick<TraceDeps, "root" | "log">, ref: string, branch: string): Promise<void> {
  const only = await Provenance.branchOnly(d.root, branch);
  Git.deleteBranch(d.root, branch);
  if ((await Git.gitAsync(d.root, ["rev-parse", "--verify", "-q", `refs/heads/${branch}`], { allowFail: true })).code === 0)
    throw new Error(`git kept ${branch} (checked out somewhere?); delete it with git branch -D ${branch}`);
  const dropped = await Provenance.dropNotes(d.root, only);
  if (dropped) d.log.info(`task ${ref}: dropped the trace records of ${dropped} commit(s) only its deleted branch held`);
}
