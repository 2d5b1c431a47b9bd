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
  /** The commit had more than one record holds (files, ranges or patch bytes): the rest has none. */
  cut?: true;
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

/** The tool call that wrote a range: among those naming the file, the last whose input holds the range's text, else the last. */
function writerOf(range: AddedRange, candidates: readonly number[], tools: readonly ToolCall[]): number | undefined {
  const probe = range.lines.map((l) => l.trim()).find((l) => l.length >= 3);
  if (probe) for (let k = candidates.length - 1; k >= 0; k--) if (tools[candidates[k]!]!.input.includes(probe)) return candidates[k];
  return candidates.at(-1);
}

/** The record of one commit of the turn. */
export function recordOf(commit: string, changed: { files: ChangedFile[]; cut: boolean }, f: TurnFacts, now = new Date()): TraceRecord {
  // A person's message (lazy send, a review) shaped the turn: their part and the agent's are one.
  const shaped = f.asked?.kind === "send" || f.asked?.kind === "review" ? f.asked.kind : undefined;
  const type: ContributorType = shaped ? "mixed" : "ai";
  const served = new Map<string, number>();
  for (const c of f.calls) {
    const m = modelId(c, f.wire);
    if (m) served.set(m, (served.get(m) ?? 0) + 1);
  }
  const turnModel = [...served.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  const turnRelated = f.calls.slice(-MAX_RELATED).map((c) => ({ type: "model_call", url: auditUri(c.id) }));
  const writers = f.tools.map((t, i) => (WRITERS.test(t.name) ? i : -1)).filter((i) => i >= 0);
  const usedTools = new Set<number>();
  const files = changed.files.map((file) => {
    const candidates = writers.filter((i) => names(f.tools[i]!.input, file.path));
    const byTool = new Map<number | "turn", Range[]>();
    for (const r of file.ranges) {
      const k = writerOf(r, candidates, f.tools) ?? "turn";
      const list = byTool.get(k) ?? [];
      list.push({ start_line: r.start, end_line: r.end, content_hash: r.hash });
      byTool.set(k, list);
    }
    if (!file.ranges.length) byTool.set("turn", []); // a binary file: attributed, no lines
    const conversations: Conversation[] = [...byTool.entries()].map(([k, ranges]) => {
      if (k === "turn")
        return {
          url: turnUri(f),
          contributor: { type, ...(turnModel ? { model_id: turnModel } : {}) },
          ranges,
          ...(turnRelated.length ? { related: turnRelated } : {}),
        };
      usedTools.add(k);
      const tool = f.tools[k]!;
      // The model call that asked for it: the last one that started before lazy read the call.
      const asked = f.calls.filter((c) => c.at <= tool.at).at(-1);
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
    models: [...served.keys()],
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
