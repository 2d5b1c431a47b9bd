/**
 * Each harness's JSON event lines turned into lazy's task events: messages, tool calls, the
 * turn's result and usage, what each tool call gave back, the harness session to resume on the next turn, and whether lazy's
 * MCP server connected (Claude Code's init event lists its servers). A line that is
 * not JSON, or an event lazy does not model, is skipped (the raw output stays in the turn's
 * folder).
 */

import { SERVER } from "./mcp";
import { contentText, toolInput, toolOutput } from "./tool-text";
import type { Harness } from "./types";

export type TaskEvent =
  | { kind: "message"; data: { text: string } }
  /** A tool call: its input as a person reads it (tool-text.ts); `id` pairs it with its output. */
  | { kind: "tool"; data: { name: string; input: string; id?: string } }
  /** What a tool call gave back, bounded (`cut`: bytes left out, said in `text` too). */
  | { kind: "output"; data: { text: string; id?: string; error?: boolean; cut?: number } }
  | { kind: "usage"; data: { input: number; output: number; cacheRead: number; cacheWrite: number } }
  | { kind: "session"; data: { id: string } }
  /** lazy's MCP server as the harness reports it at start: anything but "connected" is a turn running blind. */
  | { kind: "mcp"; data: { status: string } }
  | { kind: "result"; data: { ok: boolean; text: string } };

const brief = (v: unknown, max = 300) => {
  const s = typeof v === "string" ? v : JSON.stringify(v ?? "");
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};
const num = (v: unknown) => (typeof v === "number" ? v : 0);
type J = Record<string, any>;

const idOf = (id: unknown) => (typeof id === "string" && id ? { id: id.slice(0, 200) } : {});

function output(raw: string, id: unknown, error: boolean): TaskEvent {
  const kept = toolOutput(raw);
  return { kind: "output", data: { ...kept, ...idOf(id), ...(error ? { error: true } : {}) } };
}

/** Codex's file changes: one `kind path` a line. */
const changes = (v: unknown) =>
  Array.isArray(v)
    ? toolInput(v.map((c) => (c && typeof c === "object" ? `${(c as J).kind ?? "change"} ${(c as J).path ?? ""}` : String(c))).join("\n"))
    : toolInput(v);

function claudeLike(e: J): TaskEvent[] {
  const out: TaskEvent[] = [];
  if (e.type === "system" && e.subtype === "init" && e.session_id) out.push({ kind: "session", data: { id: String(e.session_id) } });
  if (e.type === "assistant" && Array.isArray(e.message?.content))
    for (const c of e.message.content) {
      if (c?.type === "text" && c.text) out.push({ kind: "message", data: { text: String(c.text) } });
      if (c?.type === "tool_use") out.push({ kind: "tool", data: { name: String(c.name), input: toolInput(c.input), ...idOf(c.id) } });
    }
  // Claude Code hands each tool's result back to the model as a user message.
  if (e.type === "user" && Array.isArray(e.message?.content))
    for (const c of e.message.content)
      if (c?.type === "tool_result") out.push(output(contentText(c.content), c.tool_use_id, c.is_error === true));
  // cursor-agent (its docs' shape): { tool_call: { readToolCall: { args, result: { success | error } } } }.
  if (e.type === "tool_call" && (e.subtype === "started" || e.subtype === "completed")) {
    const [name, call] = Object.entries((e.tool_call ?? {}) as J)[0] ?? ["tool", {}];
    if (e.subtype === "started") out.push({ kind: "tool", data: { name, input: toolInput(call?.args ?? call), ...idOf(e.call_id) } });
    else if (call?.result) {
      const r = call.result as J;
      const ok = r.success ?? null;
      const text = ok
        ? typeof ok.stdout === "string" || typeof ok.stderr === "string"
          ? [ok.stdout, ok.stderr].filter((x) => typeof x === "string" && x).join("\n")
          : typeof ok.content === "string"
            ? ok.content
            : toolInput(ok)
        : toolInput(r.error?.message ?? r.error ?? r.failure ?? r);
      out.push(output(text, e.call_id, !ok));
    }
  }
  if (e.type === "result") {
    if (e.usage)
      out.push({
        kind: "usage",
        data: {
          input: num(e.usage.input_tokens),
          output: num(e.usage.output_tokens),
          cacheRead: num(e.usage.cache_read_input_tokens),
          cacheWrite: num(e.usage.cache_creation_input_tokens),
        },
      });
    if (e.session_id) out.push({ kind: "session", data: { id: String(e.session_id) } });
    out.push({ kind: "result", data: { ok: e.subtype === "success" && !e.is_error, text: brief(e.result ?? e.subtype, 4000) } });
  }
  return out;
}

/** Claude Code's init event lists its MCP servers with their status (docs/wire.md, "MCP wiring per harness"); cursor-agent's is not known. */
function claude(e: J): TaskEvent[] {
  const out = claudeLike(e);
  if (e.type === "system" && e.subtype === "init" && Array.isArray(e.mcp_servers))
    for (const s of e.mcp_servers) if (s?.name === SERVER) out.push({ kind: "mcp", data: { status: String(s.status ?? "unknown") } });
  return out;
}

function codex(e: J): TaskEvent[] {
  const out: TaskEvent[] = [];
  if (e.type === "thread.started" && e.thread_id) out.push({ kind: "session", data: { id: String(e.thread_id) } });
  if (e.type === "item.completed" && e.item) {
    // Codex reports warnings as items of type "error" on turns that succeed: a message, not a failure.
    if (e.item.type === "agent_message" || e.item.type === "error")
      out.push({ kind: "message", data: { text: String(e.item.text ?? e.item.message ?? "") } });
    if (e.item.type === "command_execution") {
      out.push({ kind: "tool", data: { name: "shell", input: toolInput(e.item.command), ...idOf(e.item.id) } });
      const code = typeof e.item.exit_code === "number" ? e.item.exit_code : null;
      const text = String(e.item.aggregated_output ?? "");
      out.push(output(code ? `${text}${text && !text.endsWith("\n") ? "\n" : ""}(exit ${code})` : text, e.item.id, !!code));
    }
    if (e.item.type === "file_change")
      out.push({ kind: "tool", data: { name: "edit", input: changes(e.item.changes), ...idOf(e.item.id) } });
  }
  if (e.type === "turn.completed") {
    const u = e.usage ?? {};
    out.push({
      kind: "usage",
      data: {
        input: num(u.input_tokens) - num(u.cached_input_tokens),
        output: num(u.output_tokens),
        cacheRead: num(u.cached_input_tokens),
        cacheWrite: num(u.cache_write_input_tokens),
      },
    });
    out.push({ kind: "result", data: { ok: true, text: "" } });
  }
  if (e.type === "turn.failed") out.push({ kind: "result", data: { ok: false, text: brief(e.error?.message ?? e.error, 4000) } });
  return out;
}

function pi(e: J): TaskEvent[] {
  const out: TaskEvent[] = [];
  if (e.type === "session" && (e.id || e.sessionId)) out.push({ kind: "session", data: { id: String(e.id ?? e.sessionId) } });
  if (e.type === "message_end" && e.message?.role === "assistant") {
    const content = Array.isArray(e.message.content) ? e.message.content : [];
    for (const c of content) if (c?.type === "text" && c.text) out.push({ kind: "message", data: { text: String(c.text) } });
    const u = e.message.usage;
    if (u)
      out.push({
        kind: "usage",
        data: { input: num(u.input), output: num(u.output), cacheRead: num(u.cacheRead), cacheWrite: num(u.cacheWrite) },
      });
  }
  if (e.type === "tool_execution_start")
    out.push({ kind: "tool", data: { name: String(e.toolName ?? "tool"), input: toolInput(e.args), ...idOf(e.toolCallId) } });
  if (e.type === "tool_execution_end") out.push(output(contentText(e.result?.content ?? e.result), e.toolCallId, e.isError === true));
  if (e.type === "agent_end") {
    const last = Array.isArray(e.messages) ? [...e.messages].reverse().find((m: J) => m?.role === "assistant") : undefined;
    const failed = last?.stopReason === "error" || last?.stopReason === "aborted";
    const text = (Array.isArray(last?.content) ? last.content : [])
      .filter((c: J) => c?.type === "text")
      .map((c: J) => c.text)
      .join("\n");
    out.push({ kind: "result", data: { ok: !failed, text: brief(failed ? (last?.errorMessage ?? text) : text, 4000) } });
  }
  return out;
}

const parsers: Record<Harness["name"], (e: J) => TaskEvent[]> = { claude, cursor: claudeLike, codex, pi };

export function parse(harness: Harness["name"], line: string): TaskEvent[] {
  const t = line.trim();
  if (!t.startsWith("{")) return [];
  try {
    return parsers[harness](JSON.parse(t));
  } catch {
    return [];
  }
}
