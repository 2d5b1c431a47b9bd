/**
 * An Agent Trace record (https://github.com/cursor/agent-trace, spec 0.1.0: "Trace Record
 * Schema") for one agent commit: the commit's added line ranges per file, each under the
 * conversation that produced it — one per tool call that wrote the file (Edit/Write/patch, as
 * the harness reported it), or the turn as a whole when none did — with the model as the proxy
 * saw it served and `related` links to the tool call and the audit rows. What lazy knows
 * beyond the spec's fields is under `metadata["dev.lazy"]` (reverse-domain, as the spec asks).
 *
 * lazy's resources are named by URIs of its own scheme (no host, nothing to fetch):
 *   lazy:task/<task id>/turn/<n>                 the turn (the conversation)
 *   lazy:task/<task id>/turn/<n>/tool/<call id>  one tool call of it
 *   lazy:audit/<row id>                          one audit row (lazy stats audit --json)
 */
import { randomUUID } from "node:crypto";
import { VERSION } from "../version";
import type { AddedRange, ChangedFile } from "./diff";
import { type Cut, inert, inertDeep } from "./inert";

/** The Agent Trace spec version lazy writes. */
export const SPEC_VERSION = "0.1.0";
/** The key of lazy's own fields in a record's metadata. */
export const VENDOR = "dev.lazy";
/** Audit rows linked from one conversation at most (the turn's count is in the metadata). */
const MAX_RELATED = 50;

export type ContributorType = "human" | "ai" | "mixed" | "unknown";

export interface Contributor {
  type: ContributorType;
  model_id?: string;
}

export interface Range {
  start_line: number;
  end_line: number;
  content_hash?: string;
  contributor?: Contributor;
}

export interface Conversation {
  url?: string;
  contributor?: Contributor;
  ranges: Range[];
  related?: { type: string; url: string }[];
}

/** What lazy adds under metadata["dev.lazy"]. */
export interface LazyFields {
  task: { id: string; code: string | null; title: string };
  turn: number;
  harness: string;
  profile: string;
  /** Why the contributor is "mixed" (a person's message shaped the turn), when it is. */
  shaped_by?: "send" | "review";
  /** The tool calls the ranges link to, by their URI (input cut as lazy logs shows it, secrets cut). */
  tools: { url: string; id: string | null; name: string; input: string }[];
  /** The turn's model calls the audit holds, and the models served. */
  model_calls: number;
  models: string[];
  /** What asked for the turn: the task's prompt, a lazy send or a review; absent with [provenance] prompts = false. */
  prompt?: { kind: "task" | "send" | "review"; text: string };
  /** The turn's newest audit rows (model calls), linked once for the whole record. */
  related?: { type: string; url: string }[];
  /** The commit had more than one record holds (files, ranges or patch bytes): the rest has none. */
  cut?: true;
  /** What was cut to keep the note within what readers accept (MAX_NOTE), when anything was. */
  trimmed?: string[];
}

export interface TraceRecord {
  version: string;
  id: string;
  timestamp: string;
  vcs?: { type: "git" | "jj" | "hg" | "svn"; revision: string };
  tool?: { name: string; version: string };
  files: { path: string; conversations: Conversation[] }[];
  metadata?: Record<string, unknown> & { [VENDOR]?: LazyFields };
}

/** One tool call of the turn, as its stored event has it. */
export interface ToolCall {
  id: string | null;
  name: string;
  input: string;
  /** When lazy read it (ms): after the model call that asked for it. */
  at: number;
}

/** One model call of the turn, as the audit has it. */
export interface ModelCall {
  id: number;
  at: number;
  served: string | null;
  asked: string | null;
}

/** What lazy knows of the turn that made the commits. */
export interface TurnFacts {
  task: { id: string; code: string | null; title: string };
  turn: number;
  harness: string;
  profile: string;
  /** The wire the profile speaks ("anthropic", "openai", "cursor"): the provider half of a model id. */
  wire: string;
  tools: ToolCall[];
  calls: ModelCall[];
  /** What asked for the turn: the task's prompt (turn 1), a person's lazy send or review (null: a turn started again with no message). */
  asked: { kind: "task" | "send" | "review"; text: string } | null;
  /** [provenance] prompts: whether the asking text goes into the record. */
  prompts: boolean;
  /** Secrets to cut (the task's grants). */
  cut: Cut;
}

/** Tools that write a file by name, as the harnesses call them. */
const WRITERS = /^(write|edit|multiedit|notebookedit|str_replace\w*|create|apply_patch|patch|edit_file|write_file|search_replace)$/i;

export const turnUri = (f: Pick<TurnFacts, "task" | "turn">) => `lazy:task/${f.task.id}/turn/${f.turn}`;
export const toolUri = (f: Pick<TurnFacts, "task" | "turn">, t: ToolCall, index: number) =>
  `${turnUri(f)}/tool/${encodeURIComponent(t.id ?? `n${index}`)}`;
export const auditUri = (id: number) => `lazy:audit/${id}`;

/** models.dev's form, provider/model: the model as served (else asked), under the profile's wire unless it names its provider. */
function modelId(call: ModelCall | undefined, wire: string): string | undefined {
  const m = call?.served ?? call?.asked;
  if (!m) return undefined;
  return (m.includes("/") ? m : `${wire}/${m}`).slice(0, 250);
}

/** Whether a tool call's input names `path` (a path of the repository: the input may hold it absolute, under the worktree). */
function names(input: string, path: string): boolean {
  let at = input.indexOf(path);
  while (at !== -1) {
    const before = at === 0 ? "" : input[at - 1]!;
    const after = input[at + path.length] ?? "";
    if ((before === "" || /[\s/:"'=]/.test(before)) && (after === "" || /[\s"',]/.test(after))) return true;
    at = input.indexOf(path, at + 1);
  }
  return false;
}

/**
 * Characters one turn's matching (paths in tool inputs, ranges' text in them) reads at most:
 * an agent can make thousands of tool calls and touch thousands of files, and this runs on the
 * daemon's thread. Past it, what is left is attributed to the turn as a whole (never wrongly to a
 * tool call).
 */
export const MATCH_WORK = 64 * 1024 * 1024;

/** What every record of a turn shares, worked out once per turn (not per commit or file). */
export interface TurnIndex {
  /** Models served (models.dev form) and how many calls each. */
  served: Map<string, number>;
  /** The model most of the turn's calls were served by. */
  turnModel: string | undefined;
  /** The turn's newest audit rows, linked once per record. */
  related: { type: string; url: string }[];
  /** The writing tool calls (indices into the turn's tools) naming each changed path, oldest first. */
  writers: Map<string, number[]>;
  /** The model call that asked for tool call k (the last that started before lazy read it). */
  askedBy(k: number): ModelCall | undefined;
  /** Characters of matching left (MATCH_WORK). */
  work: { left: number };
}

/**
 * The turn's index: the served models once, and one path → writers index built in one pass over
 * the writing tool calls' inputs. An input names a path where a token of it (split at white
 * space, quotes and commas, as `names` bounds a path) ends with the path after a "/", ":" or "="
 * (or is it): each token's suffixes at those marks are looked up among `paths`, the turn's
 * changed files. A path holding a space, quote or comma is looked for the old way, within the
 * same work bound.
 */
export function indexTurn(f: TurnFacts, paths: Iterable<string>): TurnIndex {
  const served = new Map<string, number>();
  for (const c of f.calls) {
    const m = modelId(c, f.wire);
    if (m) served.set(m, (served.get(m) ?? 0) + 1);
  }
  const turnModel = [...served.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  const related = f.calls.slice(-MAX_RELATED).map((c) => ({ type: "model_call", url: auditUri(c.id) }));
  const work = { left: MATCH_WORK };
  const wanted = new Set(paths);
  let longest = 0;
  const odd: string[] = [];
  for (const p of wanted) {
    longest = Math.max(longest, p.length);
    if (/[\s"',]/.test(p)) odd.push(p);
  }
  const writers = new Map<string, number[]>();
  const add = (path: string, i: number) => {
    const list = writers.get(path);
    if (!list) writers.set(path, [i]);
    else if (list.at(-1) !== i) list.push(i);
  };
  for (let i = 0; i < f.tools.length && work.left > 0; i++) {
    const t = f.tools[i]!;
    if (!WRITERS.test(t.name)) continue;
    const input = t.input;
    work.left -= input.length;
    for (const token of input.split(/[\s"',]+/)) {
      // From the token's end leftwards: each start after a mark, while what is left could be a path.
      for (let s = token.length - 1; s >= -1; s--) {
        if (s >= 0 && token[s] !== "/" && token[s] !== ":" && token[s] !== "=") continue;
        if (token.length - (s + 1) > longest) break;
        const candidate = token.slice(s + 1);
        work.left -= candidate.length;
        if (candidate && wanted.has(candidate)) add(candidate, i);
      }
    }
    for (const p of odd) {
      if (work.left <= 0) break;
      work.left -= input.length * Math.ceil(p.length / 8); // as writerOf's probe: a search costs up to both lengths
      if (names(input, p)) add(p, i);
    }
  }
  for (const list of writers.values()) list.sort((a, b) => a - b);
  // The model call before each tool call: calls ordered by time once, then a binary search.
  const byTime = [...f.calls].sort((a, b) => a.at - b.at);
  const asked = new Map<number, ModelCall | undefined>();
  const askedBy = (k: number) => {
    if (asked.has(k)) return asked.get(k);
    const at = f.tools[k]!.at;
    let lo = 0;
    let hi = byTime.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byTime[mid]!.at <= at) lo = mid + 1;
      else hi = mid;
    }
    asked.set(k, byTime[lo - 1]);
    return byTime[lo - 1];
  };
  return { served, turnModel, related, writers, askedBy, work };
}

/** The tool call that wrote a range: among those naming the file, the last whose input holds the range's text, else the last. */
function writerOf(
  range: AddedRange,
  candidates: readonly number[],
  tools: readonly ToolCall[],
  work: { left: number },
): number | undefined {
  // The probe is the agent's text too: kept short, and a search charged for its length (a
  // substring search can cost the input's length times the probe's on text made for it).
  const probe = range.lines
    .map((l) => l.trim())
    .find((l) => l.length >= 3)
    ?.slice(0, 64);
  if (probe)
    for (let k = candidates.length - 1; k >= 0 && work.left > 0; k--) {
      const input = tools[candidates[k]!]!.input;
      work.left -= input.length * Math.ceil(probe.length / 8);
      if (input.includes(probe)) return candidates[k];
    }
  return candidates.at(-1);
}

/** The record of one commit of the turn. `index`: the turn's (indexTurn), made once for all its commits. */
export function recordOf(
  commit: string,
  changed: { files: ChangedFile[]; cut: boolean },
  f: TurnFacts,
  now = new Date(),
  index: TurnIndex = indexTurn(
    f,
    changed.files.map((c) => c.path),
  ),
): TraceRecord {
  // A person's message (lazy send, a review) shaped the turn: their part and the agent's are one.
  const shaped = f.asked?.kind === "send" || f.asked?.kind === "review" ? f.asked.kind : undefined;
  const type: ContributorType = shaped ? "mixed" : "ai";
  const { turnModel } = index;
  const usedTools = new Set<number>();
  const files = changed.files.map((file) => {
    const candidates = index.writers.get(file.path) ?? [];
    const byTool = new Map<number | "turn", Range[]>();
    for (const r of file.ranges) {
      const k = writerOf(r, candidates, f.tools, index.work) ?? "turn";
      const list = byTool.get(k) ?? [];
      list.push({ start_line: r.start, end_line: r.end, content_hash: r.hash });
      byTool.set(k, list);
    }
    if (!file.ranges.length) byTool.set("turn", []); // a binary file: attributed, no lines
    const conversations: Conversation[] = [...byTool.entries()].map(([k, ranges]) => {
      // The turn's audit rows are linked once, in the record's metadata (related), not per file.
      if (k === "turn") return { url: turnUri(f), contributor: { type, ...(turnModel ? { model_id: turnModel } : {}) }, ranges };
      usedTools.add(k);
      const tool = f.tools[k]!;
      const asked = index.askedBy(k);
      const model = modelId(asked, f.wire) ?? turnModel;
      return {
        url: turnUri(f),
        contributor: { type, ...(model ? { model_id: model } : {}) },
        ranges,
        related: [{ type: "tool_call", url: toolUri(f, tool, k) }, ...(asked ? [{ type: "model_call", url: auditUri(asked.id) }] : [])],
      };
    });
    return { path: file.path, conversations };
  });
  const lazy: LazyFields = {
    task: f.task,
    turn: f.turn,
    harness: f.harness,
    profile: f.profile,
    ...(shaped ? { shaped_by: shaped } : {}),
    tools: [...usedTools]
      .sort((a, b) => a - b)
      .map((k) => ({ url: toolUri(f, f.tools[k]!, k), id: f.tools[k]!.id, name: f.tools[k]!.name, input: f.tools[k]!.input })),
    model_calls: f.calls.length,
    models: [...index.served.keys()],
    ...(index.related.length ? { related: index.related } : {}),
    ...(f.asked && f.prompts ? { prompt: { kind: f.asked.kind, text: inert(f.asked.text, f.cut, 8_000) } } : {}),
    ...(changed.cut ? { cut: true as const } : {}),
  };
  return inertDeep(
    {
      version: SPEC_VERSION,
      id: randomUUID(),
      timestamp: now.toISOString(),
      vcs: { type: "git" as const, revision: commit },
      tool: { name: "lazy", version: VERSION },
      files,
      metadata: { [VENDOR]: lazy },
    },
    f.cut,
    8_000,
  );
}

/** Tool inputs kept this long at most in a record cut down to fit (fitNote). */
const CUT_INPUT = 200;

/**
 * The record as a note's text, never over `max` bytes (what readers accept, MAX_NOTE): as it
 * is (indented), else compact, else cut down step by step — tool inputs shortened, ranges'
 * content hashes dropped and touching ranges merged, then the files past those that fit left
 * out — each step said in `metadata["dev.lazy"].trimmed` (and `cut`). Null, with the reason,
 * when even its frame does not fit.
 */
export function fitNote(rec: TraceRecord, max: number): { text: string; trimmed: string[] } | { skipped: string } {
  const size = (s: string) => Buffer.byteLength(s);
  const pretty = `${JSON.stringify(rec, null, 2)}\n`;
  if (size(pretty) <= max) return { text: pretty, trimmed: [] };
  const compact = () => `${JSON.stringify(rec)}\n`;
  let text = compact();
  if (size(text) <= max) return { text, trimmed: [] };
  const lazy = (rec.metadata?.[VENDOR] ?? {}) as LazyFields;
  const trimmed: string[] = [];
  const mark = (what: string) => {
    trimmed.push(what);
    lazy.cut = true;
    lazy.trimmed = trimmed;
  };
  if (rec.metadata) rec.metadata[VENDOR] = lazy;
  // 1. Tool inputs and the prompt, shortened.
  mark(`tool inputs and the prompt cut to ${CUT_INPUT} characters`);
  for (const t of lazy.tools ?? []) if (t.input.length > CUT_INPUT) t.input = `${t.input.slice(0, CUT_INPUT)}… (cut to fit the note)`;
  if (lazy.prompt && lazy.prompt.text.length > CUT_INPUT)
    lazy.prompt.text = `${lazy.prompt.text.slice(0, CUT_INPUT)}… (cut to fit the note)`;
  text = compact();
  if (size(text) <= max) return { text, trimmed };
  // 2. Content hashes dropped, touching ranges of a conversation merged.
  trimmed.pop();
  mark("tool inputs and the prompt shortened; content hashes dropped and touching ranges merged");
  for (const file of rec.files)
    for (const c of file.conversations) {
      const merged: Range[] = [];
      for (const r of c.ranges) {
        const last = merged.at(-1);
        if (last && r.start_line <= last.end_line + 1) last.end_line = Math.max(last.end_line, r.end_line);
        else merged.push({ start_line: r.start_line, end_line: r.end_line });
      }
      c.ranges = merged;
    }
  text = compact();
  if (size(text) <= max) return { text, trimmed };
  // 3. The files that fit, in order; the rest left out.
  const all = rec.files;
  rec.files = [];
  const frame = size(compact()) + 256; // room for the "trimmed" line below
  let used = frame;
  let kept = 0;
  for (const file of all) {
    const n = size(JSON.stringify(file)) + 1;
    if (used + n > max) break;
    used += n;
    kept++;
  }
  if (frame > max) return { skipped: `its record's frame alone (${lazy.tools?.length ?? 0} tool calls) is over ${max} bytes` };
  rec.files = all.slice(0, kept);
  mark(`${all.length - kept} of ${all.length} files left out`);
  text = compact();
  return size(text) <= max ? { text, trimmed } : { skipped: `its record is over ${max} bytes even cut down` };
}
