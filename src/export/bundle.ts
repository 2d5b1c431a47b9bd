/**
 * The evidence bundle's parts (lazy export, docs/export.md): each one a text, JSON where it is
 * data, gathered from lazy's own records — the store (task, events, usage), the audit trail, and
 * host-side hardened git in the project root (diff, commits, the Agent Trace notes), run without
 * blocking the daemon's thread — then scrubbed (redact.ts), fitted to the bundle's byte budget
 * (a part past it is cut, and the manifest says so and why) and hashed. Nothing here reads an
 * agent-written folder.
 */
import type { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { type Config, resolveProfile } from "../config";
import { DIFF_FLAGS } from "../diff";
import * as Git from "../git";
import { modelsOfTask, spentByTask } from "../spending";
import { Runs, type Task, type TaskEvent, Tasks } from "../store";
import { LazyError } from "../util/errors";
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

const revs = async (root: string, args: string[]): Promise<string[]> => {
  const r = await Git.gitAsync(root, args, { allowFail: true });
  return r.code === 0 ? r.out.trim().split("\n").filter(Boolean) : [];
};

async function rangeOf(root: string, db: Database, task: Task): Promise<Range> {
  const branch = `${Git.BRANCH_PREFIX}${task.code ?? task.id}`;
  const merged = task.status === "accepted" ? Tasks.latest(db, [task.id], "summary").get(task.id)?.data.merge : undefined;
  if (typeof merged === "string" && SHA.test(merged)) {
    const [base, tip] = await revs(root, ["rev-parse", `${merged}^1^{commit}`, `${merged}^2^{commit}`]);
    if (base && tip) return { branch, base, tip, merge: merged, note: null };
    return {
      branch,
      base: null,
      tip: null,
      merge: merged,
      note: `The merge commit ${merged.slice(0, 12)} is no longer in the project's history.`,
    };
  }
  const [tip] = await revs(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`]);
  if (!tip)
    return { branch, base: null, tip: null, merge: null, note: `No branch ${branch}: the task has not started, or it was rejected.` };
  const [base] = await revs(root, ["merge-base", "HEAD", tip]);
  return base
    ? { branch, base, tip, merge: null, note: null }
    : { branch, base: null, tip, merge: null, note: `${branch} shares no history with the project's HEAD.` };
}

/** What git printed, read off the daemon's thread and never much past `max` bytes (`over`: it printed more, and this is its start); null when it failed. */
async function gitText(root: string, args: string[], max: number): Promise<{ text: string; over: boolean } | null> {
  const text = await Git.gitRead(root, args, max + 1);
  if (text === null) return null;
  if (Buffer.byteLength(text) <= max) return { text, over: false };
  // Valid UTF-8 is as long as git's bytes: more than `max` of it, git printed more.
  if (!text.includes("\uFFFD")) return { text, over: true };
  // Bytes that were not UTF-8 grow as U+FFFD: whether git printed more, gitBytes says.
  const all = await Git.gitBytes(root, args, max);
  if (all === null) return null;
  return all === "over" ? { text, over: true } : { text: Buffer.from(all).toString("utf8"), over: false };
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

async function commitsOf(root: string, r: Range, max: number): Promise<{ commits: Commit[]; over: boolean }> {
  if (!r.base || !r.tip) return { commits: [], over: false };
  const log = await gitText(
    root,
    ["log", "-z", "--reverse", "--format=%H%n%P%n%an <%ae>%n%aI%n%cn <%ce>%n%cI%n%B", `${r.base}..${r.tip}`],
    max,
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

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

const MiB = 1024 * 1024;
const size = (n: number) =>
  n >= MiB ? `${Math.round(n / MiB).toLocaleString("en-US")} MiB` : `${Math.ceil(n / 1024).toLocaleString("en-US")} KiB`;

/** What a part takes of the document: its text as a JSON string, escapes and quotes included. */
const inDocument = (text: string) => Buffer.byteLength(JSON.stringify(text));

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

/** The diff is scrubbed and measured this much at a time, the daemon's thread let go between (a hostile diff is tens of MiB). */
const CHUNK = 1024 * 1024;

/** The diff scrubbed and within `room`: whole, or its first lines that fit (never a line cut in two); `redacted` counts in what is kept. */
async function fitDiff(raw: string, room: number, redact: Redactor): Promise<{ text: string; redacted: number; cut: boolean }> {
  const out: string[] = [];
  let used = 2; // the string's quotes in the document
  let redacted = 0;
  for (let at = 0; at < raw.length; ) {
    const nl = raw.indexOf("\n", at + CHUNK);
    const end = nl === -1 ? raw.length : nl + 1;
    const s = redact.scrub(raw.slice(at, end));
    const size = inDocument(s.text) - 2;
    if (used + size <= room) {
      out.push(s.text);
      used += size;
      redacted += s.count;
      at = end;
      await new Promise((r) => setImmediate(r));
      continue;
    }
    // The chunk does not fit: its lines, one by one, while they do (no cut spans a line, so line by line is the same scrub).
    for (let from = at; from < end; ) {
      const eol = raw.indexOf("\n", from);
      const stop = eol === -1 || eol >= end ? end : eol + 1;
      const line = redact.scrub(raw.slice(from, stop));
      const n = inDocument(line.text) - 2;
      if (used + n > room) break;
      out.push(line.text);
      used += n;
      redacted += line.count;
      from = stop;
    }
    return { text: out.join(""), redacted, cut: true };
  }
  return { text: out.join(""), redacted, cut: false };
}

/** A JSON part within `room`: its lists shortened (their first items kept) until it fits, the part marked `cut`; `{"cut": true}` when none of it does. */
function fitJson(
  value: Record<string, unknown>,
  lists: string[],
  room: number,
  scrub: (v: unknown) => { text: string; redacted: number },
): { text: string; redacted: number; kept: string | null } {
  const whole = scrub(value);
  let taken = inDocument(whole.text);
  if (taken <= room) return { ...whole, kept: null };
  const lengths = lists.map((k) => (Array.isArray(value[k]) ? (value[k] as unknown[]).length : 0));
  let f = room / taken;
  for (let i = 0; i < 12 && lengths.some((n) => Math.floor(n * f) > 0); i++) {
    const kept = lengths.map((n) => Math.floor(n * f));
    const fewer = { ...value, ...Object.fromEntries(lists.map((k, j) => [k, (value[k] as unknown[]).slice(0, kept[j])])), cut: true };
    const s = scrub(fewer);
    taken = inDocument(s.text);
    if (taken <= room)
      return {
        ...s,
        kept: lists.map((k, j) => `${kept[j]!.toLocaleString("en-US")} of ${lengths[j]!.toLocaleString("en-US")} ${k}`).join(", "),
      };
    f *= Math.min(0.9, room / taken);
  }
  const bare = scrub(Object.fromEntries([...Object.entries(value).filter(([k]) => !lists.includes(k)), ["cut", true]]));
  if (inDocument(bare.text) <= room) return { ...bare, kept: `none of its ${lists.join(", ")}` };
  return { text: '{\n  "cut": true\n}\n', redacted: 0, kept: "nothing" };
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
  const events = Tasks.events(d.db, task.id);
  const r = await rangeOf(d.root, d.db, task);
  const ran = ranOn(d.db, config, task);
  // Each read is bounded by the whole budget: nothing past it could be kept anyway.
  const [log, diff, rows, refused] = await Promise.all([
    commitsOf(d.root, r, budget),
    r.base && r.tip ? gitText(d.root, ["diff", ...FLAGS, r.base, r.merge ?? r.tip], budget) : null,
    d.audit.query({ taskId: task.id, limit: AUDIT_ROWS + 1 }),
    d.audit.refusals({ taskId: task.id, limit: REFUSAL_LINES + 1 }),
  ]);
  const { commits } = log;
  const notes = await Git.notesOn(
    d.root,
    Git.AGENT_TRACE_NOTES,
    commits.map((c) => c.commit),
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
  const scrubJson = (v: unknown) => {
    const counter = { count: 0 };
    const clean = redact.value(v, counter);
    return { text: `${JSON.stringify(clean, null, 2)}\n`, redacted: counter.count };
  };
  const fitted = new Map<string, Fitted>();
  let used = 0;
  for (const p of drafts) {
    const room = Math.max(0, budget - used);
    const past = `past the bundle's budget of ${size(budget)} (lazy export --max-mb)`;
    let f: Fitted;
    if (p.type === "text/x-diff") {
      const t = await fitDiff(p.text, room, redact);
      f = {
        text: t.text,
        redacted: t.redacted,
        why: t.cut
          ? [p.why, `${past}: its first ${lines(t.text).toLocaleString("en-US")} lines are kept`].filter(Boolean).join("; ")
          : p.why,
      };
    } else {
      const j = fitJson(p.value, p.lists, room, scrubJson);
      f = { text: j.text, redacted: j.redacted, why: j.kept ? [p.why, `${past}: ${j.kept} kept`].filter(Boolean).join("; ") : p.why };
    }
    used += inDocument(f.text);
    fitted.set(p.name, f);
    await new Promise((r) => setImmediate(r)); // the next part after whatever waited meanwhile
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
    // Lone surrogates become U+FFFD here, as any reader's UTF-8 encoder would make them.
    const bytes = Buffer.from(f.text, "utf8");
    parts[name] = bytes.toString("utf8");
    const type = name.endsWith(".patch") ? "text/x-diff" : "application/json";
    entries.push({
      name,
      type,
      bytes: bytes.length,
      sha256: sha256(bytes),
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
