/**
 * `lazy trace FILE:LINE`: who wrote a line, found the way the Agent Trace spec says (6.5 "Line
 * Tracking"): git blame (hardened, in the project root, on the working tree's file) names the
 * commit and the line's number there; the commit's record (notes.ts) names the range holding
 * it, and through it the task, turn, model and tool call, and what asked for the turn. A line
 * of a commit with no record is a person's: "not written by an agent task".
 */
import { lstatSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { gitBounded, unquotePath } from "../git";
import { LazyError } from "../util/errors";
import { readRecord } from "./notes";
import { type Contributor, type LazyFields, type TraceRecord, VENDOR } from "./record";

export interface Traced {
  file: string;
  line: number;
  /** The commit that last changed the line (null: not committed yet), and the line's number and path there. */
  commit: string | null;
  at: { path: string; line: number } | null;
  /** Whether an agent task wrote it (its commit has a record). */
  agent: boolean;
  /** A person's line: the commit's author and date as git has them. */
  author?: { name: string; date: string };
  task?: LazyFields["task"];
  turn?: number;
  harness?: string;
  contributor?: Contributor;
  /** The tool call that wrote the range (null: the turn as a whole). */
  tool?: { id: string | null; name: string; input: string } | null;
  range?: { start_line: number; end_line: number; content_hash?: string } | null;
  /** What asked for the turn (left out under [provenance] prompts = false). */
  prompt?: { kind: "task" | "send" | "review"; text: string };
  /** The record's id. */
  record?: string;
}

/** "app.ts:42" → the file (relative to `cwd`) and the line; a usage error names the form. */
export function parseSpot(spot: string): { file: string; line: number } {
  const m = /^([\s\S]+):(\d+)$/.exec(spot);
  const line = m ? Number(m[2]) : NaN;
  if (!m || !Number.isSafeInteger(line) || line < 1)
    throw new LazyError("invalid_input", `Name a file and a line as FILE:LINE, like lazy trace src/app.ts:42 (got "${spot}").`);
  return { file: m[1]!, line };
}

/** The project-relative path of `file` (named from `cwd`), checked: inside the project, a regular file. */
function projectPath(root: string, cwd: string, file: string): string {
  const abs = resolve(cwd, file);
  const st = lstatSync(abs, { throwIfNoEntry: false });
  if (!st) throw new LazyError("invalid_input", `No file ${file} here (${abs}): name a file of the project, as lazy trace PATH:LINE.`);
  if (!st.isFile())
    throw new LazyError(
      "invalid_input",
      `${file} is ${st.isDirectory() ? "a folder" : st.isSymbolicLink() ? "a link" : "not a regular file"}: lazy trace follows a line of a file.`,
    );
  const rel = relative(root, join(realpathSync(dirname(abs)), basename(abs)));
  if (rel.startsWith("..") || isAbsolute(rel)) throw new LazyError("invalid_input", `${file} is outside the project at ${root}.`);
  return rel;
}

interface Blamed {
  commit: string | null;
  path: string;
  line: number;
  author: string;
  time: number;
}

/** How long tracing a line may take unless the caller says (lazy trace, at a terminal: it can wait). */
export const TRACE_MS = 120_000;
/** The dashboard's hover: a person pointing at a line waits seconds, not minutes. */
export const HOVER_MS = 10_000;
/** What one line's blame may print (no line content: --incremental); a commit's summary or author is in it. */
const BLAME_MAX = 1024 * 1024;

/** The time limit: `ms`, or LAZY_TRACE_TIMEOUT_MS from the environment (tests and slow machines). */
const limitOf = (ms: number) => {
  const env = Number(process.env.LAZY_TRACE_TIMEOUT_MS);
  return Number.isSafeInteger(env) && env > 0 ? env : ms;
};

/** Past the time limit: the cause (git stopped), and the remedy. */
function tooLong(path: string, line: number, ms: number, rev?: string): LazyError {
  return new LazyError(
    "conflict",
    // A hover traces a task's branch or merge (rev): lazy trace reads the working tree, so only git blame of that revision is the remedy there.
    `Tracing ${path}:${line} took over ${seconds(ms)}, so lazy stopped git blame: the file's history is too long to walk in that time. ${ms < TRACE_MS && !rev ? `Run lazy trace ${path}:${line} in the project (it waits ${TRACE_MS / 1000} s), or` : "Run"} git blame -L ${line},${line} ${rev ? `${rev} ` : ""}-- ${path} yourself.`,
  );
}

/** A hover that waited its whole time for a turn and never started: not the file's history, the others ahead of it. */
function queued(path: string, line: number, ms: number): LazyError {
  return new LazyError(
    "conflict",
    `Tracing ${path}:${line} waited ${seconds(ms)} behind ${HOVERS} other lines being traced and did not start; point at the line again once those are answered.`,
  );
}

const seconds = (ms: number) => (ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`);

/**
 * Blame one line of the working tree's file, or of `rev`'s: `-L line,line` (that line only),
 * `--incremental` (no line content: a line of megabytes is not read), paths unquoted
 * (core.quotePath=false, and git's quoting of what is left read back: unquotePath), bounded in bytes and time.
 */
async function blame(root: string, path: string, line: number, time: { left: number; limit: number }, rev?: string): Promise<Blamed> {
  const r = await gitBounded(
    root,
    ["-c", "core.quotePath=false", "blame", "--incremental", "--no-textconv", "-L", `${line},${line}`, ...(rev ? [rev] : []), "--", path],
    { maxBytes: BLAME_MAX, timeoutMs: time.left },
  );
  if (r.late) throw tooLong(path, line, time.limit, rev);
  if (r.cut)
    throw new LazyError(
      "conflict",
      `git blame of ${path}:${line} printed over ${BLAME_MAX / 1024} KiB for one line (a commit's author or subject that long): look with git blame -L ${line},${line} -- ${path}.`,
    );
  if (r.code !== 0) {
    const why = r.err.trim().split("\n").at(-1) ?? "";
    // A file git does not track yet: none of its lines is committed.
    if (/no such path/i.test(why)) {
      if (rev) throw new LazyError("invalid_input", `${path} is not a file of ${rev}.`);
      return { commit: null, path, line, author: "", time: 0 };
    }
    if (/outside repository|is beyond a symbolic link/i.test(why)) throw new LazyError("invalid_input", `${path} is outside the project.`);
    if (/has only/i.test(why))
      throw new LazyError("invalid_input", `Line ${line} is past the end of ${path} (git: ${why.replace(/^fatal: /, "")}).`);
    throw new LazyError("internal", `git blame of ${path}:${line} failed: ${why}`);
  }
  const out = r.out.toString("utf8").split("\n");
  const head = /^([0-9a-f]{40,64}) (\d+) \d+/.exec(out[0] ?? "");
  if (!head) throw new LazyError("internal", `git blame of ${path}:${line} answered nothing lazy can read.`);
  const field = (k: string) => out.find((l) => l.startsWith(`${k} `))?.slice(k.length + 1) ?? "";
  const commit = /^0+$/.test(head[1]!) ? null : head[1]!;
  const name = field("filename");
  return {
    commit,
    path: name ? (unquotePath(name) ?? name) : path,
    line: Number(head[2]),
    author: field("author"),
    time: Number(field("author-time")),
  };
}

/** Which conversation and range of a record hold `path`:`line`. */
function rangeOf(rec: TraceRecord, path: string, line: number) {
  for (const f of rec.files ?? [])
    if (f?.path === path)
      for (const c of Array.isArray(f.conversations) ? f.conversations : [])
        for (const r of Array.isArray(c?.ranges) ? c.ranges : [])
          if (typeof r?.start_line === "number" && r.start_line <= line && line <= r.end_line) return { c, r };
  return null;
}

/**
 * Who wrote line `line` of `file` (named from `cwd`) in the project at `root`. `prompts`:
 * [provenance] prompts; `timeoutMs`: how long git may take (blame and the note), TRACE_MS unless said.
 */
export async function trace(
  root: string,
  cwd: string,
  file: string,
  line: number,
  prompts: boolean,
  timeoutMs = TRACE_MS,
): Promise<Traced> {
  const path = projectPath(root, cwd, file);
  const limit = limitOf(timeoutMs);
  const deadline = Date.now() + limit;
  return answer(root, path, line, await blame(root, path, line, { left: limit, limit }), prompts, deadline);
}

/**
 * Who wrote line `line` of `path` as it is in commit `rev` (the dashboard's diff: a task's
 * branch, or the merge that brought it in). `path` comes from a request: a repository path,
 * handed to git after `--` only. Never blocks the daemon's thread; HOVER_MS unless said.
 */
export async function traceAt(
  root: string,
  rev: string,
  path: string,
  line: number,
  prompts: boolean,
  timeoutMs = HOVER_MS,
): Promise<Traced> {
  if (!path || path.length > 4096 || path.includes("\0") || !Number.isSafeInteger(line) || line < 1)
    throw new LazyError("invalid_input", "Name a file of the diff (path) and a line of it (line ≥ 1).");
  const ms = limitOf(timeoutMs);
  const deadline = Date.now() + ms;
  return inTurn(async () => {
    const left = deadline - Date.now();
    if (left <= 0) throw queued(path, line, ms);
    return answer(root, path, line, await blame(root, path, line, { left, limit: ms }, rev), prompts, deadline);
  });
}

/** Hovers traced at once: a page swept by the mouse starts no more git than this; the rest wait their turn, within their time. */
const HOVERS = 4;
let hovering = 0;
const waiting: (() => void)[] = [];
async function inTurn<T>(fn: () => Promise<T>): Promise<T> {
  if (hovering < HOVERS) hovering++;
  else await new Promise<void>((go) => waiting.push(go)); // the slot is handed over as it is
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else hovering--;
  }
}

async function answer(root: string, path: string, line: number, b: Blamed, prompts: boolean, deadline: number): Promise<Traced> {
  const base = { file: path, line, commit: b.commit, at: b.commit ? { path: b.path, line: b.line } : null };
  const rec = b.commit ? await readRecord(root, b.commit, { timeoutMs: Math.max(1000, deadline - Date.now()) }) : null;
  if (!rec) return { ...base, agent: false, author: { name: b.author, date: b.time ? new Date(b.time * 1000).toISOString() : "" } };
  const lazy = (rec.metadata?.[VENDOR] ?? {}) as Partial<LazyFields>;
  const hit = rangeOf(rec, b.path, b.line);
  const toolUrl = hit?.c.related?.find((x) => x?.type === "tool_call")?.url;
  const tool = toolUrl ? lazy.tools?.find((t) => t.url === toolUrl) : undefined;
  const contributor = hit?.r.contributor ?? hit?.c.contributor;
  return {
    ...base,
    agent: true,
    ...(lazy.task ? { task: lazy.task } : {}),
    ...(typeof lazy.turn === "number" ? { turn: lazy.turn } : {}),
    ...(lazy.harness ? { harness: lazy.harness } : {}),
    ...(contributor ? { contributor } : {}),
    tool: tool ? { id: tool.id, name: tool.name, input: tool.input } : null,
    range: hit ? { start_line: hit.r.start_line, end_line: hit.r.end_line, content_hash: hit.r.content_hash } : null,
    ...(prompts && lazy.prompt ? { prompt: lazy.prompt } : {}),
    record: rec.id,
  };
}
