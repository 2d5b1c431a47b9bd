/**
 * The evidence bundle's parts (lazy export, docs/export.md): each one a text, JSON where it is
 * data, gathered from lazy's own records — the store (task, events, usage), the audit trail, and
 * host-side hardened git in the project root (diff, commits, the Agent Trace notes), each run
 * once, bounded in bytes and in the export's time for git, without blocking the daemon's thread
 * — then scrubbed (redact.ts), fitted to the bundle's byte budget (a part past it is cut, and the
 * manifest says so and why) and hashed. A part is scrubbed and serialized once, a few MiB at a
 * time, the thread let go between: the API answers while a large export is made. Nothing here
 * reads an agent-written folder.
 */
import type { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { type Config, resolveProfile } from "../config";
import { DIFF_FLAGS } from "../diff";
import * as Git from "../git";
import { modelsOfTask, spentByTask } from "../spending";
import { Runs, type Task, type TaskEvent, Tasks } from "../store";
import { LazyError } from "../util/errors";
import { CHUNK, fitDiff, fitJson, LEAST, letGo } from "./fit";
import { Redactor } from "./redact";

export const FORMAT = "lazy-evidence/1";

/** The parts' budget (MiB) by default and at most: what `lazy export --max-mb` may ask. */
export const BUDGET_MB = 64;
export const BUDGET_MB_MAX = 512;
/** Audit rows and refusal lines of the task, at most (the trail keeps fewer than that by default). */
const AUDIT_ROWS = 200_000;
const REFUSAL_LINES = 10_000;
/** The diff as the bundle holds it: lazy's flags (src/diff), and binary files as patches a reader can apply. */
const FLAGS = [...DIFF_FLAGS, "--binary", "--full-index"];

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
  /** The secrets lazy holds now for the task (its placeholders and MCP token) and the keys it stores: cut in every form. */
  secrets(taskId: string): string[];
}

export interface PartEntry {
  name: string;
  type: "application/json" | "text/x-diff";
  bytes: number;
  sha256: string;
  /** Secrets and query strings taken out of it (redact.ts). */
  redacted: number;
  /** It holds less than lazy has: `why` says what was left out and why. */
  cut?: true;
  why?: string;
}

export interface Bundle {
  format: typeof FORMAT;
  manifest: {
    task: { id: string; code: string | null };
    made: string;
    lazy: string;
    hash: "sha256 of each part's UTF-8 bytes";
    prompts: boolean;
    /** What the parts may take of the document, in bytes (as JSON strings in it): a part past it is cut. */
    budget: number;
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

/** All of one export's git runs together get this long; each run is given what is left of it. */
const GIT_MS = 120_000;

/** One export's git: each run bounded in bytes and in what is left of the export's time (gitBounded), refused with cause and remedy once that is gone. */
type Reader = ((args: string[], maxBytes: number, what: string) => Promise<Git.BoundedRun>) & {
  /** What is left of the export's time for git, in ms. */
  left(): number;
  /** The refusal once it is gone. */
  late(what: string): LazyError;
};

function readerOf(root: string): Reader {
  const until = Date.now() + GIT_MS;
  const late = (what: string) =>
    new LazyError(
      "conflict",
      `Reading ${what} took git past the export's ${GIT_MS / 1000} s, so it was stopped: the repository may be busy or very large. Try again when it is quieter, or with a smaller --max-mb (less of git's output is read).`,
    );
  const left = () => until - Date.now();
  const run = async (args: string[], maxBytes: number, what: string) => {
    if (left() <= 0) throw late(what);
    const r = await Git.gitBounded(root, args, { maxBytes, timeoutMs: left() });
    if (r.late) throw late(what);
    return r;
  };
  return Object.assign(run, { left, late });
}

const revs = async (git: Reader, args: string[]): Promise<string[]> => {
  const r = await git(args, 64 * 1024, "the task's branch");
  return r.code === 0 ? r.out.toString("utf8").trim().split("\n").filter(Boolean) : [];
};

async function rangeOf(git: Reader, db: Database, task: Task): Promise<Range> {
  const branch = `${Git.BRANCH_PREFIX}${task.code ?? task.id}`;
  const merged = task.status === "accepted" ? Tasks.latest(db, [task.id], "summary").get(task.id)?.data.merge : undefined;
  if (typeof merged === "string" && SHA.test(merged)) {
    const [base, tip] = await revs(git, ["rev-parse", `${merged}^1^{commit}`, `${merged}^2^{commit}`]);
    if (base && tip) return { branch, base, tip, merge: merged, note: null };
    return {
      branch,
      base: null,
      tip: null,
      merge: merged,
      note: `The merge commit ${merged.slice(0, 12)} is no longer in the project's history.`,
    };
  }
  const [tip] = await revs(git, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`]);
  if (!tip)
    return { branch, base: null, tip: null, merge: null, note: `No branch ${branch}: the task has not started, or it was rejected.` };
  const [base] = await revs(git, ["merge-base", "HEAD", tip]);
  return base
    ? { branch, base, tip, merge: null, note: null }
    : { branch, base: null, tip, merge: null, note: `${branch} shares no history with the project's HEAD.` };
}

/** What git printed, read off the daemon's thread in one bounded run, never past `max` bytes (`over`: it printed more, and this is its start); null when it failed. */
async function gitText(git: Reader, args: string[], max: number, what: string): Promise<{ text: string; over: boolean } | null> {
  const r = await git(args, max, what);
  if (r.cut) return { text: r.out.toString("utf8"), over: true };
  return r.code === 0 ? { text: r.out.toString("utf8"), over: false } : null;
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

async function commitsOf(git: Reader, r: Range, max: number): Promise<{ commits: Commit[]; over: boolean }> {
  if (!r.base || !r.tip) return { commits: [], over: false };
  const log = await gitText(
    git,
    ["log", "-z", "--reverse", "--format=%H%n%P%n%an <%ae>%n%aI%n%cn <%ce>%n%cI%n%B", `${r.base}..${r.tip}`],
    max,
    "the task's commits",
  );
  if (!log) return { commits: [], over: false };
  const records = log.text.split("\0").filter((x) => x.trim());
  if (log.over) records.pop();
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
  return { commits: commits.filter((c) => SHA.test(c.commit)), over: log.over };
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

/**
 * The profile a task ran on (its run's, else the one it was added with) and that profile's
 * harness; null when the profile is gone from lazy.toml. A read: a task that never ran gets no
 * run row from it. The one answer for the bundle and accept's Co-Authored-By (runner/trailers.ts).
 */
export function ranOn(
  db: Database,
  config: Config,
  task: Task,
): { profile: string; harness: ReturnType<typeof resolveProfile>["harness"] | null } {
  const profile = Runs.find(db, task.id)?.profile ?? task.profile;
  try {
    return { profile, harness: resolveProfile(config, profile).harness };
  } catch {
    return { profile, harness: null }; // the profile is gone from lazy.toml
  }
}

const MiB = 1024 * 1024;
const size = (n: number) =>
  n >= MiB ? `${Math.round(n / MiB).toLocaleString("en-US")} MiB` : `${Math.ceil(n / 1024).toLocaleString("en-US")} KiB`;

/** A part before it is fitted: text (the diff) or a JSON value whose `lists` (top-level arrays) may be shortened. */
type Draft =
  | { name: string; type: "text/x-diff"; text: string; why: string | null }
  | { name: string; type: "application/json"; value: Record<string, unknown>; lists: string[]; why: string | null };

interface Fitted {
  text: string;
  redacted: number;
  why: string | null;
}

const lines = (text: string) => {
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
};

/** Events are read this many at a time, the daemon's thread let go between (a flood of tool calls is 100 MB of them). */
const EVENT_PAGE = 2000;

/** All of a task's events, oldest first, read a page at a time. */
async function eventsOfTask(db: Database, taskId: string): Promise<TaskEvent[]> {
  const all: TaskEvent[] = [];
  for (;;) {
    const page = Tasks.events(db, taskId, all.at(-1)?.id ?? 0, EVENT_PAGE);
    for (const e of page) all.push(e);
    if (page.length < EVENT_PAGE) return all;
    await letGo();
  }
}

/** Where `text` may be cut at `end` without parting a surrogate pair: `end`, or one before. */
export const cutAt = (text: string, end: number) => {
  const c = text.charCodeAt(end - 1);
  return end < text.length && c >= 0xd800 && c <= 0xdbff ? end - 1 : end;
};

/** A part as the bundle holds it (lone surrogates as U+FFFD, as any reader's UTF-8 encoder makes them), its UTF-8 size and sha256, a slice at a time. */
async function hashed(text: string): Promise<{ text: string; bytes: number; sha256: string }> {
  const whole = text.toWellFormed();
  const hash = createHash("sha256");
  let bytes = 0;
  for (let at = 0; at < whole.length; ) {
    const end = cutAt(whole, Math.min(whole.length, at + CHUNK));
    const piece = Buffer.from(whole.slice(at, end), "utf8");
    hash.update(piece);
    bytes += piece.length;
    at = end;
    if (at < whole.length) await letGo();
  }
  return { text: whole, bytes, sha256: hash.digest("hex") };
}

/** Options of one export. */
export interface ExportOptions {
  /** The parts' budget in bytes (BUDGET_MB by default, BUDGET_MB_MAX at most). */
  budget?: number;
}

/** The bundle of one task (its code or id prefix), each part scrubbed, fitted to the budget and hashed. */
export async function bundle(d: ExportDeps, ref: string, opts: ExportOptions = {}): Promise<Bundle> {
  const budget = Math.min(opts.budget ?? BUDGET_MB * MiB, BUDGET_MB_MAX * MiB);
  const task = Tasks.resolve(d.db, ref);
  if (task.status === "running")
    throw new LazyError(
      "conflict",
      `Task ${task.code ?? task.id} is running: its record is still being written. Export it once its turn has ended (lazy logs ${task.code ?? task.id} -f follows it).`,
    );
  const config = d.config();
  const prompts = config.provenance.prompts;
  const events = await eventsOfTask(d.db, task.id);
  const git = readerOf(d.root);
  const r = await rangeOf(git, d.db, task);
  const ran = ranOn(d.db, config, task);
  // Each read is bounded by the whole budget: nothing past it could be kept anyway.
  const [log, diff, rows, refused] = await Promise.all([
    commitsOf(git, r, budget),
    r.base && r.tip ? gitText(git, ["diff", ...FLAGS, r.base, r.merge ?? r.tip], budget, "the task's diff") : null,
    d.audit.query({ taskId: task.id, limit: AUDIT_ROWS + 1 }),
    d.audit.refusals({ taskId: task.id, limit: REFUSAL_LINES + 1 }),
  ]);
  const { commits } = log;
  if (commits.length && git.left() <= 0) throw git.late("the Agent Trace notes");
  const notes = await Git.notesOn(
    d.root,
    Git.AGENT_TRACE_NOTES,
    commits.map((c) => c.commit),
    { timeoutMs: git.left() },
  );
  const over = (n: number, max: number, what: string) =>
    n > max ? `the task has more than ${max.toLocaleString("en-US")} ${what}: the newest ${max.toLocaleString("en-US")} are kept` : null;
  const readPast = `git printed more than the bundle's budget (${size(budget)}): what it printed past that was not read`;

  // In the order they are given room: what a reader needs first, the largest and the agent's own last.
  const drafts: Draft[] = [
    {
      name: "task.json",
      type: "application/json",
      lists: [],
      why: null,
      value: {
        id: task.id,
        code: task.code,
        // The title is the prompt's first line unless one was given: the person's words either way.
        ...(prompts ? { title: task.title, prompt: task.prompt } : {}),
        status: task.status,
        profile: ran.profile,
        harness: ran.harness,
        group: task.group,
        createdAt: task.createdAt,
        updatedAt: task.updatedAt,
        branch: r.branch,
        base: r.base,
        tip: r.tip,
        merge: r.merge,
        ...(r.note ? { note: r.note } : {}),
      },
    },
    { name: "decision.json", type: "application/json", lists: [], why: null, value: decisionOf(task, events) },
    {
      name: "usage.json",
      type: "application/json",
      lists: ["models"],
      why: null,
      value: { spent: spentByTask(d.db, config, task.id), models: modelsOfTask(d.db, task.id) },
    },
    ...(prompts
      ? [
          {
            name: "review.json",
            type: "application/json",
            lists: ["messages", "reviews"],
            why: null,
            value: {
              messages: events.filter((e) => e.kind === "user").map((e) => ({ at: e.at, text: e.data.text })),
              reviews: events.filter((e) => e.kind === "review").map((e) => ({ at: e.at, ...e.data })),
            },
          } satisfies Draft,
        ]
      : []),
    // A diff read to its bound ends in a line cut in two: that line is not kept.
    {
      name: "diff.patch",
      type: "text/x-diff",
      text: diff?.over ? diff.text.slice(0, diff.text.lastIndexOf("\n") + 1) : (diff?.text ?? ""),
      why: diff?.over ? readPast : null,
    },
    {
      name: "commits.json",
      type: "application/json",
      lists: ["commits"],
      why: log.over ? readPast : null,
      value: { commits, ...(log.over ? { cut: true } : {}) },
    },
    {
      name: "trace.json",
      type: "application/json",
      lists: ["records", "without"],
      why: null,
      value: {
        ref: Git.AGENT_TRACE_NOTES,
        records: commits.flatMap((c) => {
          const n = notes.get(c.commit);
          return n ? [{ commit: c.commit, record: noteValue(n.text), ...(n.cut ? { cut: true } : {}) }] : [];
        }),
        without: commits.filter((c) => !notes.has(c.commit)).map((c) => c.commit),
      },
    },
    { name: "events.json", type: "application/json", lists: ["events"], why: null, value: { events: eventsOf(events, prompts) } },
    {
      name: "audit.json",
      type: "application/json",
      lists: ["rows", "refused"],
      why:
        [over(rows.length, AUDIT_ROWS, "audit rows"), over(refused.length, REFUSAL_LINES, "refusal lines")].filter(Boolean).join("; ") ||
        null,
      value: {
        rows: rows.length > AUDIT_ROWS ? rows.slice(-AUDIT_ROWS) : rows,
        refused: refused.length > REFUSAL_LINES ? refused.slice(-REFUSAL_LINES) : refused,
        ...(rows.length > AUDIT_ROWS || refused.length > REFUSAL_LINES ? { cut: true } : {}),
      },
    },
  ];

  const redact = new Redactor(d.secrets(task.id));
  const fitted = new Map<string, Fitted>();
  const least = (p: Draft) => (p.type === "text/x-diff" ? LEAST.diff : LEAST.json);
  // What the parts still to come take at least: kept free, so that together they are within the budget.
  let reserved = drafts.reduce((n, p) => n + least(p), 0);
  let used = 0;
  for (const p of drafts) {
    reserved -= least(p);
    const room = Math.max(least(p), budget - used - reserved);
    const past = `past the bundle's budget of ${size(budget)} (lazy export --max-mb)`;
    let f: Fitted;
    let taken: number;
    if (p.type === "text/x-diff") {
      const t = await fitDiff(p.text, room, redact);
      taken = t.taken;
      f = {
        text: t.text,
        redacted: t.redacted,
        why: t.cut
          ? [p.why, `${past}: its first ${lines(t.text).toLocaleString("en-US")} lines are kept`].filter(Boolean).join("; ")
          : p.why,
      };
    } else {
      const j = await fitJson(p.value, p.lists, room, redact);
      taken = j.taken;
      f = { text: j.text, redacted: j.redacted, why: j.kept ? [p.why, `${past}: ${j.kept} kept`].filter(Boolean).join("; ") : p.why };
    }
    used += taken;
    fitted.set(p.name, f);
    await letGo(); // the next part after whatever waited meanwhile
  }

  const parts: Record<string, string> = {};
  const entries: PartEntry[] = [];
  // The manifest's order: the diff, then the JSON parts as they always were.
  for (const name of [
    "diff.patch",
    "task.json",
    "commits.json",
    "trace.json",
    "audit.json",
    "usage.json",
    "events.json",
    "decision.json",
    "review.json",
  ]) {
    const f = fitted.get(name);
    if (!f) continue;
    const h = await hashed(f.text);
    parts[name] = h.text;
    const type = name.endsWith(".patch") ? "text/x-diff" : "application/json";
    entries.push({
      name,
      type,
      bytes: h.bytes,
      sha256: h.sha256,
      redacted: f.redacted,
      ...(f.why ? { cut: true as const, why: f.why } : {}),
    });
  }
  return {
    format: FORMAT,
    manifest: {
      task: { id: task.id, code: task.code },
      made: new Date().toISOString(),
      lazy: d.version,
      hash: "sha256 of each part's UTF-8 bytes",
      prompts,
      budget,
      parts: entries,
      left_out: prompts ? [] : [{ name: "review.json", why: "[provenance] prompts = false: no prompt, message or review comment" }],
    },
    parts,
  };
}
