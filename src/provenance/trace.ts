/**
 * `lazy trace FILE:LINE`: who wrote a line, found the way the Agent Trace spec says (6.5 "Line
 * Tracking"): git blame (hardened, in the project root, on the working tree's file) names the
 * commit and the line's number there; the commit's record (notes.ts) names the range holding
 * it, and through it the task, turn, model and tool call, and what asked for the turn. A line
 * of a commit with no record is a person's: "not written by an agent task".
 */
import { lstatSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { git } from "../git";
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

/** Blame one line of the working tree's file, or of `rev`'s. */
function blame(root: string, path: string, line: number, rev?: string): Blamed {
  const r = git(root, ["blame", "--porcelain", "--no-textconv", "-L", `${line},${line}`, ...(rev ? [rev] : []), "--", path], {
    allowFail: true,
    maxBytes: 1024 * 1024,
  });
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
  const out = r.out.split("\n");
  const head = /^([0-9a-f]{40,64}) (\d+) \d+/.exec(out[0] ?? "");
  if (!head) throw new LazyError("internal", `git blame of ${path}:${line} answered nothing lazy can read.`);
  const field = (k: string) => out.find((l) => l.startsWith(`${k} `))?.slice(k.length + 1) ?? "";
  const commit = /^0+$/.test(head[1]!) ? null : head[1]!;
  return { commit, path: field("filename") || path, line: Number(head[2]), author: field("author"), time: Number(field("author-time")) };
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

/** Who wrote line `line` of `file` (named from `cwd`) in the project at `root`. `prompts`: [provenance] prompts. */
export function trace(root: string, cwd: string, file: string, line: number, prompts: boolean): Traced {
  const path = projectPath(root, cwd, file);
  return answer(root, path, line, blame(root, path, line), prompts);
}

/**
 * Who wrote line `line` of `path` as it is in commit `rev` (the dashboard's diff: a task's
 * branch, or the merge that brought it in). `path` comes from a request: a repository path,
 * handed to git after `--` only.
 */
export function traceAt(root: string, rev: string, path: string, line: number, prompts: boolean): Traced {
  if (!path || path.length > 4096 || path.includes("\0") || !Number.isSafeInteger(line) || line < 1)
    throw new LazyError("invalid_input", "Name a file of the diff (path) and a line of it (line ≥ 1).");
  return answer(root, path, line, blame(root, path, line, rev), prompts);
}

function answer(root: string, path: string, line: number, b: Blamed, prompts: boolean): Traced {
  const base = { file: path, line, commit: b.commit, at: b.commit ? { path: b.path, line: b.line } : null };
  const rec = b.commit ? readRecord(root, b.commit) : null;
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
