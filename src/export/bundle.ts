/**
 * The evidence bundle's parts (lazy export, docs/export.md): each one a text, JSON where it is
 * data, gathered from lazy's own records — the store (task, events, usage), the audit trail, and
 * host-side hardened git in the project root (diff, commits, the Agent Trace notes) — then
 * scrubbed (redact.ts) and hashed. Nothing here reads an agent-written folder.
 */
import type { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { type Config, resolveProfile } from "../config";
import * as Git from "../git";
import { modelsOfTask, spentByTask } from "../spending";
import { Runs, type Task, type TaskEvent, Tasks } from "../store";
import { LazyError } from "../util/errors";
import { scrub, scrubValue } from "./redact";

export const FORMAT = "lazy-evidence/1";

/** The diff and the commits are read up to these sizes; past them, the part says it was cut. */
const DIFF_MAX = 64 * 1024 * 1024;
const LOG_MAX = 16 * 1024 * 1024;
/** Audit rows and refusal lines of the task, at most (the trail keeps fewer than that by default). */
const AUDIT_ROWS = 200_000;
const REFUSAL_LINES = 10_000;
const DIFF_FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--binary", "--full-index"];

/** What a bundle reads besides the store and the project's git. */
export interface ExportDeps {
  db: Database;
  root: string;
  config: () => Config;
  version: string;
  audit: {
    query(o: { taskId: string; limit: number }): Promise<unknown[]>;
    refusals(o: { taskId: string; limit: number }): Promise<unknown[]>;
  };
}

export interface PartEntry {
  name: string;
  type: "application/json" | "text/x-diff";
  bytes: number;
  sha256: string;
  /** Credentials and query strings taken out of it (redact.ts). */
  redacted: number;
  cut?: boolean;
}

export interface Bundle {
  format: typeof FORMAT;
  manifest: {
    task: { id: string; code: string | null };
    made: string;
    lazy: string;
    hash: "sha256 of each part's UTF-8 bytes";
    prompts: boolean;
    parts: PartEntry[];
    /** Parts a setting left out, each with the reason. */
    left_out: { name: string; why: string }[];
  };
  parts: Record<string, string>;
}

/** The task's commits and what they changed, as lazy knows them: what the merge brought in once accepted, else what accept would merge. */
interface Range {
  branch: string;
  base: string | null;
  tip: string | null;
  merge: string | null;
  note: string | null;
}

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;

function rangeOf(root: string, db: Database, task: Task): Range {
  const branch = `${Git.BRANCH_PREFIX}${task.code ?? task.id}`;
  const merged = task.status === "accepted" ? Tasks.latest(db, [task.id], "summary").get(task.id)?.data.merge : undefined;
  if (typeof merged === "string" && SHA.test(merged)) {
    const r = Git.git(root, ["rev-parse", `${merged}^1^{commit}`, `${merged}^2^{commit}`], { allowFail: true });
    const [base, tip] = r.out.trim().split("\n");
    if (r.code === 0 && base && tip) return { branch, base, tip, merge: merged, note: null };
    return {
      branch,
      base: null,
      tip: null,
      merge: merged,
      note: `The merge commit ${merged.slice(0, 12)} is no longer in the project's history.`,
    };
  }
  const tip = Git.git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`], { allowFail: true }).out.trim();
  if (!tip)
    return { branch, base: null, tip: null, merge: null, note: `No branch ${branch}: the task has not started, or it was rejected.` };
  const base = Git.git(root, ["merge-base", "HEAD", tip], { allowFail: true }).out.trim();
  return base
    ? { branch, base, tip, merge: null, note: null }
    : { branch, base: null, tip, merge: null, note: `${branch} shares no history with the project's HEAD.` };
}

interface Commit {
  commit: string;
  parents: string[];
  author: string;
  authored: string;
  committer: string;
  committed: string;
  message: string;
}

function commitsOf(root: string, r: Range): { commits: Commit[]; cut: boolean } {
  if (!r.base || !r.tip) return { commits: [], cut: false };
  const log = Git.git(root, ["log", "-z", "--reverse", "--format=%H%n%P%n%an <%ae>%n%aI%n%cn <%ce>%n%cI%n%B", `${r.base}..${r.tip}`], {
    allowFail: true,
    maxBytes: LOG_MAX,
  });
  const records = log.out.split("\0").filter((x) => x.trim());
  if (log.cut) records.pop();
  const commits = records.map((rec) => {
    const lines = rec.replace(/^\n/, "").split("\n");
    const [commit = "", parents = "", author = "", authored = "", committer = "", committed = ""] = lines;
    return {
      commit,
      parents: parents.split(" ").filter(Boolean),
      author,
      authored,
      committer,
      committed,
      message: lines.slice(6).join("\n"),
    };
  });
  return { commits: commits.filter((c) => SHA.test(c.commit)), cut: !!log.cut };
}

/** A note as the bundle keeps it: its JSON when it is JSON (an Agent Trace record), else its text. */
function noteValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text; // not ours to fix: kept as written
  }
}

/** The task's events as `lazy logs --json` gives them (tool outputs already cut as stored), the person's words left out when `prompts` is false. */
function eventsOf(events: TaskEvent[], prompts: boolean): TaskEvent[] {
  if (prompts) return events;
  return events
    .filter((e) => e.kind !== "user" && e.kind !== "review")
    .map((e) => {
      if (e.kind !== "status" || !("message" in e.data)) return e;
      const { message: _left, ...data } = e.data;
      return { ...e, data };
    });
}

/** Who moved the task to accepted, rejected or closed, when, and what the accept merged. */
function decisionOf(task: Task, events: TaskEvent[]) {
  const ended = events.filter((e) => e.kind === "status" && ["accepted", "rejected", "closed"].includes(String(e.data.to))).at(-1);
  const summary = events.filter((e) => e.kind === "summary").at(-1);
  return {
    status: task.status,
    decision: ended
      ? {
          to: ended.data.to,
          at: ended.at,
          by: ended.data.by ?? null,
          ...(ended.data.reason ? { reason: ended.data.reason } : {}),
        }
      : null,
    ...(summary && ended?.data.to === "accepted" ? { accept: summary.data } : {}),
  };
}

function harnessOf(config: Config, profile: string): string | null {
  try {
    return resolveProfile(config, profile).harness;
  } catch {
    return null; // the profile is gone from lazy.toml
  }
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** The bundle of one task (its code or id prefix), each part scrubbed and hashed. */
export async function bundle(d: ExportDeps, ref: string): Promise<Bundle> {
  const task = Tasks.resolve(d.db, ref);
  if (task.status === "running")
    throw new LazyError(
      "conflict",
      `Task ${task.code ?? task.id} is running: its record is still being written. Export it once its turn has ended (lazy logs ${task.code ?? task.id} -f follows it).`,
    );
  const config = d.config();
  const prompts = config.provenance.prompts;
  const events = Tasks.events(d.db, task.id);
  const r = rangeOf(d.root, d.db, task);
  const profile = Runs.get(d.db, task.id).profile ?? task.profile;
  const { commits, cut: commitsCut } = commitsOf(d.root, r);
  const notes = Git.notesOn(
    d.root,
    Git.AGENT_TRACE_NOTES,
    commits.map((c) => c.commit),
  );
  const diff =
    r.base && r.tip ? Git.git(d.root, ["diff", ...DIFF_FLAGS, r.base, r.merge ?? r.tip], { allowFail: true, maxBytes: DIFF_MAX }) : null;

  const json: [string, unknown, boolean?][] = [
    [
      "task.json",
      {
        id: task.id,
        code: task.code,
        // The title is the prompt's first line unless one was given: the person's words either way.
        ...(prompts ? { title: task.title, prompt: task.prompt } : {}),
        status: task.status,
        profile,
        harness: harnessOf(config, profile),
        group: task.group,
        createdAt: task.createdAt,
        updatedAt: task.updatedAt,
        branch: r.branch,
        base: r.base,
        tip: r.tip,
        merge: r.merge,
        ...(r.note ? { note: r.note } : {}),
      },
    ],
    ["commits.json", { commits, ...(commitsCut ? { cut: true } : {}) }, commitsCut],
    [
      "trace.json",
      {
        ref: Git.AGENT_TRACE_NOTES,
        records: commits.flatMap((c) => {
          const n = notes.get(c.commit);
          return n ? [{ commit: c.commit, record: noteValue(n.text), ...(n.cut ? { cut: true } : {}) }] : [];
        }),
        without: commits.filter((c) => !notes.has(c.commit)).map((c) => c.commit),
      },
    ],
    [
      "audit.json",
      {
        rows: await d.audit.query({ taskId: task.id, limit: AUDIT_ROWS }),
        refused: await d.audit.refusals({ taskId: task.id, limit: REFUSAL_LINES }),
      },
    ],
    ["usage.json", { spent: spentByTask(d.db, config, task.id), models: modelsOfTask(d.db, task.id) }],
    ["events.json", { events: eventsOf(events, prompts) }],
    ["decision.json", decisionOf(task, events)],
  ];
  if (prompts)
    json.push([
      "review.json",
      {
        messages: events.filter((e) => e.kind === "user").map((e) => ({ at: e.at, text: e.data.text })),
        reviews: events.filter((e) => e.kind === "review").map((e) => ({ at: e.at, ...e.data })),
      },
    ]);

  const parts: Record<string, string> = {};
  const entries: PartEntry[] = [];
  const add = (name: string, type: PartEntry["type"], text: string, redacted: number, cut?: boolean) => {
    // Lone surrogates become U+FFFD here, as any reader's UTF-8 encoder would make them.
    const bytes = Buffer.from(text, "utf8");
    parts[name] = bytes.toString("utf8");
    entries.push({ name, type, bytes: bytes.length, sha256: sha256(bytes), redacted, ...(cut ? { cut: true } : {}) });
  };
  const patch = scrub(diff ? diff.out : "");
  add("diff.patch", "text/x-diff", patch.text, patch.count, !!diff?.cut);
  for (const [name, value, cut] of json) {
    const counter = { count: 0 };
    const clean = scrubValue(value, counter);
    add(name, "application/json", `${JSON.stringify(clean, null, 2)}\n`, counter.count, cut);
  }
  return {
    format: FORMAT,
    manifest: {
      task: { id: task.id, code: task.code },
      made: new Date().toISOString(),
      lazy: d.version,
      hash: "sha256 of each part's UTF-8 bytes",
      prompts,
      parts: entries,
      left_out: prompts ? [] : [{ name: "review.json", why: "[provenance] prompts = false: no prompt, message or review comment" }],
    },
    parts,
  };
}
