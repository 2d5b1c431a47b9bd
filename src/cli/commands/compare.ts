/**
 * Best-of-N on the command line: `lazy compare G` (the candidates side by side, the [review]
 * check run first on those without a verdict), and what `lazy run --profiles` / `lazy task add
 * --profiles` do with a group: make it, start every candidate at once, wait for all, compare.
 */

import { BASE_PASSES, type Comparison, counts } from "../../compare";
import type { Diff } from "../../diff";
import { costText, line } from "../../lines";
import type { Task, TaskEvent } from "../../store";
import { type ErrorCode, LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, duration, print, printJson, setExitCode, table } from "../command";
import { promptFrom } from "../prompt-input";
import { say } from "../voice";
import { heading, printPatch, statLines } from "./diff";

const enc = encodeURIComponent;

/** The candidates a command asks for: `--profiles a,b,c`, or `--n N` on `--profile` (or the default one). */
export interface GroupArgs {
  profiles?: string;
  n?: string;
  profile?: string;
}

export const groupArgs = {
  profiles: { type: "string", description: "Best-of-N: one candidate task per profile, e.g. --profiles claude,codex" },
  n: { type: "string", description: "Best-of-N: this many candidates on --profile (or the default profile)" },
} as const;

/** Whether the command makes a group, and the request body for it; refused with the reason when the flags do not fit. */
export function groupBody(a: GroupArgs): { profiles: string[] } | { n: number; profile?: string } | null {
  if (a.profiles === undefined && a.n === undefined) return null;
  if (a.profiles !== undefined && a.n !== undefined) throw new LazyError("invalid_input", "Give --profiles a,b,c or --n N, not both.");
  if (a.profiles !== undefined) {
    if (a.profile !== undefined) throw new LazyError("invalid_input", "Give --profiles a,b,c or --profile P, not both.");
    const list = a.profiles.split(",").map((p) => p.trim());
    if (list.some((p) => !p)) throw new LazyError("invalid_input", `--profiles "${a.profiles}" has an empty name: --profiles a,b,c.`);
    return { profiles: list };
  }
  const n = Number(a.n);
  if (!/^\d+$/.test(String(a.n).trim()) || n < 2)
    throw new LazyError("invalid_input", `--n is how many candidates (2 or more), not "${a.n}".`);
  return { n, ...(a.profile ? { profile: a.profile } : {}) };
}

/** What `lazy task add` and `lazy run` start from: the group the flags ask for (or none), the prompt, and the daemon. */
export async function groupAndPrompt(a: GroupArgs & { prompt?: string; file?: string }) {
  const group = groupBody(a);
  const prompt = await promptFrom("prompt", a.prompt, a.file);
  return { group, prompt, c: await Client.launching(findProjectRoot()) };
}

/** The comparison as people read it: one row a candidate, then each one's summary and failed check's tail. */
export function printComparison(c: Comparison): void {
  print(`Group ${c.group}: ${c.title}`);
  print(`Check: ${c.check ?? "none ([review] check in lazy.toml names one)"}`);
  if (c.check)
    print(
      `Base: ${c.base ? `${c.base.ok ? "pass" : `FAIL (exit ${c.base.code})`} on ${c.base.commit.slice(0, 12)}` : "-"}${c.baseNote ? ` (${c.baseNote})` : ""}`,
    );
  print(
    table([
      ["CANDIDATE", "PROFILE", "STATUS", "CHANGES", "CHECK", "TOKENS", "COST", "WALL"],
      ...c.candidates.map((x) => [
        x.code ?? x.id,
        x.profile,
        x.status,
        `${x.diffstat.files} file(s) +${x.diffstat.added} -${x.diffstat.removed}`,
        x.check ? (counts(c, x) ? "pass" : x.check.ok ? "pass on base too" : `FAIL (exit ${x.check.code})`) : "-",
        String(x.tokens),
        costText(x, true),
        duration(x.wallMs),
      ]),
    ]),
  );
  for (const x of c.candidates) {
    const notes = [
      x.summary ? `summary: ${x.summary.split("\n")[0]}` : null,
      x.check && !x.check.ok ? `check output (tail): ${x.check.error ?? x.check.output.trim().split("\n").slice(-3).join(" | ")}` : null,
      !x.check && c.check ? `check: ${x.checkNote}` : null,
    ].filter(Boolean);
    if (notes.length) print(`  ${x.code ?? x.id}: ${notes.join("; ")}`);
  }
  if (c.keep)
    print(
      `\nKeep one: lazy accept ${c.keep} (ranked first; closes the others, their branches stay). See one: lazy diff CODE; two side by side: lazy compare ${c.group} --diff A B.`,
    );
  else if (c.keepNote) print(`\nKeep one: none (${c.keepNote}).`);
  if (c.base?.ok) print(`Note: ${BASE_PASSES}; no candidate counts as passing it.`);
  print(`On the dashboard (lazy dashboard): /groups/${encodeURIComponent(c.group)}`);
}

/** Ask for a comparison, with the check run first (unless `check` is false). */
export async function fetchComparison(c: Client.Client, group: string, check: boolean, force = false): Promise<Comparison> {
  if (!check) return c.request<Comparison>("GET", `/api/groups/${enc(group)}`);
  const r = await c.request<{ results: { task: string; ran: boolean; why?: string }[]; comparison: Comparison }>(
    "POST",
    `/api/groups/${enc(group)}/check`,
    force ? { force: true } : undefined,
    60 * 60_000,
  );
  return r.comparison;
}

export const compare = command({
  meta: {
    name: "compare",
    description:
      "Show a best-of-N group's candidates side by side: status, diffstat, the [review] check's verdict (run first, in a container, on candidates without one), tokens and cost from lazy's audit, wall time",
  },
  args: {
    group: { type: "positional", description: "The group's code (lazy run --profiles prints it)", required: true },
    check: { type: "boolean", description: "Run [review] check on candidates without a verdict first (--no-check: do not)", default: true },
    recheck: { type: "boolean", description: "Run the check again on every candidate whose turn has ended" },
    diff: {
      type: "string",
      description: "The difference between two candidates' branches: --diff A B (A's tip against B's; codes of this group only)",
    },
    to: { type: "positional", description: "With --diff A: the other candidate", required: false },
    stat: { type: "boolean", description: "With --diff: only the files changed and their line counts" },
    json: { type: "boolean", description: "Print JSON on stdout" },
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    if (args.diff !== undefined || args.to !== undefined) {
      if (!args.diff || !args.to)
        throw new LazyError(
          "invalid_input",
          `Name two candidates: lazy compare ${args.group} --diff A B (lazy compare ${args.group} lists them).`,
        );
      const d = await c.request<Diff & { from: string; to: string }>(
        "GET",
        `/api/groups/${enc(args.group)}/diff?from=${enc(args.diff)}&to=${enc(args.to)}`,
      );
      if (args.json) return printJson(d);
      print(`${d.from} → ${d.to}: ${heading(d)}`);
      if (d.note) print(d.note);
      if (!d.files.length) return;
      if (args.stat) return print(statLines(d).join("\n"));
      printPatch(d);
      if (d.cut) print(`(cut: the diff passed lazy's limit; later files show no hunks; --stat counts them all.)`);
      return;
    }
    const r = await fetchComparison(c, args.group, args.check !== false || !!args.recheck, !!args.recheck);
    if (args.json) return printJson(r);
    printComparison(r);
  },
});

/** `lazy task add --profiles …`: the group and its candidates, none started. */
export async function addGroup(c: Client.Client, body: Record<string, unknown>): Promise<{ group: string; tasks: Task[] }> {
  return c.request<{ group: string; tasks: Task[] }>("POST", "/api/groups", body, Client.LAUNCH_TIMEOUT_MS);
}

export interface RunExits {
  done: number;
  agentFailed: number;
  paused: number;
  exitFor: (code: ErrorCode) => number;
}

/**
 * `lazy run --profiles a,b "…"`: make the group, start every candidate at once, print their
 * events (each line with its candidate's code), wait for all, run the check, print the
 * comparison. Exit code (documented in lazy run's help):
 *   0  at least one candidate finished (and passed [review] check, when lazy.toml names one: a
 *      check that passes on the untouched base too is no candidate's pass);
 *   3  none did: each failed, or failed the check;
 *   7  none did and some are held by [usage_pause] (without --wait);
 *   4, 5, 6  every candidate's launch was refused (the first refusal's code, as lazy run alone);
 *      5 also when a profile has no credential: the group is refused before anything is made.
 */
export async function runGroup(
  c: Client.Client,
  body: Record<string, unknown>,
  opts: { json: boolean; wait: boolean },
  exits: RunExits,
): Promise<void> {
  try {
    // Every profile's credential first: a missing one refuses the group before anything is made.
    const { profiles, n, profile } = body;
    await c.request("POST", "/api/groups/ready", { profiles, n, profile });
  } catch (e) {
    // An unknown profile or an untrusted lazy.toml are refused as lazy run's own (exit 2, 4).
    if (!(e instanceof LazyError) || e.code !== "credential_missing") throw e;
    say.error(e.message);
    if (opts.json)
      printJson({
        status: "refused",
        error: { code: e.code, message: e.message, details: e.details, ...(e.facts ? { facts: e.facts } : {}) },
      });
    return setExitCode(exits.exitFor(e.code));
  }
  const g = await addGroup(c, body);
  if (!opts.json) say.info(`Group ${g.group}: ${g.tasks.map((t) => `${t.code} [${t.profile}]`).join(", ")}; starting them.`);
  const started = await Promise.allSettled(g.tasks.map((t) => c.request<Task>("POST", `/api/tasks/${t.id}/start`, undefined, 30 * 60_000)));
  const refused: LazyError[] = [];
  started.forEach((s, i) => {
    if (s.status === "fulfilled") return;
    const e = s.reason;
    if (!(e instanceof LazyError)) throw e;
    refused.push(e);
    say.error(`${g.tasks[i]!.code}: ${e.message}`);
  });
  const after = new Map(g.tasks.map((t) => [t.id, 0]));
  const held = new Set<string>();
  let live = g.tasks.filter((_, i) => started[i]!.status === "fulfilled").map((t) => t.id);
  while (live.length) {
    const next: string[] = [];
    for (const id of live) {
      const r = await c.request<{ task: Task; events: TaskEvent[] }>("GET", `/api/tasks/${id}/events?after=${after.get(id)}`);
      let pause = false;
      for (const e of r.events) {
        after.set(id, e.id);
        if (e.kind === "status") pause = e.data.reason === "usage_pause";
        if (!opts.json) say.info(`[${r.task.code}] ${line(e)}`);
      }
      if (pause && r.task.status === "waiting") held.add(id);
      else if (r.task.status === "running" || r.task.status === "queued") held.delete(id);
      const waitingOnHold = held.has(id) && r.task.status === "waiting";
      if (r.task.status === "running" || r.task.status === "queued" || (waitingOnHold && opts.wait)) next.push(id);
    }
    live = next;
    if (live.length) await Bun.sleep(300);
  }
  const cmp = await fetchComparison(c, g.group, true);
  const good = cmp.candidates.filter(
    (x) => (x.status === "done" || (x.status === "waiting" && !held.has(x.id))) && (!cmp.check || counts(cmp, x)),
  );
  let code = exits.done;
  if (!good.length) {
    if (refused.length === g.tasks.length) code = exits.exitFor(refused[0]!.code);
    else if (held.size) code = exits.paused;
    else code = exits.agentFailed;
  }
  if (opts.json) printJson({ ...cmp, held: [...held], best: good.map((x) => x.code ?? x.id) });
  else printComparison(cmp);
  setExitCode(code);
}
