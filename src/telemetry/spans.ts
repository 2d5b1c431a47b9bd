/**
 * A turn as OpenTelemetry spans, named by the GenAI semantic conventions (gen_ai.* as of the
 * conventions' own repository, v0.1.0): one `invoke_agent` span for the turn, a `chat` span per
 * model call the proxy audited, an `execute_tool` span per tool call the harness reported and per
 * MCP tool call lazy's MCP bridge served, and each egress decision as an event on the turn's span.
 *
 * Nothing here reads a prompt, a completion, a tool's input or output: the conventions make
 * content opt-in and lazy does not opt in. Every string that an agent could have chosen (a tool
 * name, a model name, a host) goes through `scrub` first.
 */
import type { AuditRow as Row } from "../proxy";
import type { TaskEvent } from "../store";

export type Attrs = Record<string, string | number | boolean>;

export interface SpanPlan {
  name: string;
  kind: "internal" | "client";
  start: number;
  end: number;
  attributes: Attrs;
  error?: string;
  events?: { name: string; at: number; attributes: Attrs }[];
  children: SpanPlan[];
  /** On a turn's span: the spans the turn had past MAX_SPANS, not made (its `lazy.spans.*_dropped` say which). */
  cut?: number;
}

export interface TurnInput {
  taskId: string;
  taskRef: string;
  turn: number;
  /** The harness that ran the turn (claude, codex, pi, cursor). */
  harness: string;
  /** The wire its profile speaks (anthropic, openai, cursor): the provider, as far as lazy knows. */
  wire: string;
  start: number;
  end: number;
  /** The status the turn left the task in (done, waiting, failed). */
  to: string;
  events: readonly TaskEvent[];
  rows: readonly Row[];
  scrub: (s: string) => string;
}

/**
 * A turn exports at most this many spans in all, its own included: no more than the exporter's
 * queue holds (export.ts MAX_QUEUE), so a turn is never cut apart there. Past it, model calls and
 * tool calls (the harness's and the MCP bridge's) share what is left evenly, the earliest of each
 * kept; the rest are counted on the turn's span.
 */
export const MAX_SPANS = 4096;
export const MAX_EGRESS = 128;
/** A string attribute is cut here. */
const MAX_TEXT = 256;

const PROVIDERS: Record<string, string> = { anthropic: "anthropic", openai: "openai", cursor: "cursor" };

const cut = (s: string) => (s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT - 1)}…` : s);

/** host and port of an origin (`https://api.anthropic.com`) or `egress:host:port`; nothing of a path or query. */
function serverOf(origin: string): Attrs {
  let a = servers.get(origin);
  if (!a) {
    if (servers.size > 1000) servers.clear();
    a = parseServer(origin);
    servers.set(origin, a);
  }
  return a;
}
const servers = new Map<string, Attrs>();

function parseServer(origin: string): Attrs {
  const e = /^egress:(.*):(\d+)$/.exec(origin);
  if (e) return { "server.address": e[1]!, "server.port": Number(e[2]) };
  try {
    const u = new URL(origin);
    const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    return { "server.address": u.hostname, "server.port": port };
  } catch {
    return {};
  }
}

const isMcp = (r: Row) => r.upstream === "lazy:mcp";
const isEgress = (r: Row) => r.role === "egress" || r.role === "broker";
/** A model call: an agent's request to a model upstream (the harness's HEAD probe is none). */
const isChat = (r: Row) => !isMcp(r) && !isEgress(r) && r.method === "POST" && !r.upstream.startsWith("lazy:");

/** `budget` shared out among kinds wanting `wants[i]` each: evenly, and what one kind leaves goes to the others. */
function share(wants: readonly number[], budget: number): number[] {
  const got = wants.map(() => 0);
  let left = budget;
  let open = wants.flatMap((w, i) => (w > 0 ? [i] : []));
  while (left > 0 && open.length) {
    const each = Math.max(1, Math.floor(left / open.length));
    for (const i of open) {
      const g = Math.min(each, wants[i]! - got[i]!, left);
      got[i]! += g;
      left -= g;
    }
    open = open.filter((i) => got[i]! < wants[i]!);
  }
  return got;
}

export function turnSpans(t: TurnInput): SpanPlan {
  // Cut before the scrub too (room for a secret across the edge): an agent's name can be megabytes.
  const s = (v: string) => cut(t.scrub(v.length > MAX_TEXT + 512 ? v.slice(0, MAX_TEXT + 512) : v));
  const provider = PROVIDERS[t.wire] ?? t.wire;
  const conversation = { "gen_ai.conversation.id": t.taskId };
  const rows = t.rows.filter((r) => r.taskId === t.taskId && r.at >= t.start - 1000 && r.at <= t.end + 1000);
  const chatsAll = rows.filter(isChat);
  const toolsAll = t.events.filter((e) => e.kind === "tool");
  const mcpsAll = rows.filter((r) => isMcp(r) && r.note?.startsWith("tools/call "));
  const [keepChats, keepTools, keepMcps] = share([chatsAll.length, toolsAll.length, mcpsAll.length], MAX_SPANS - 1) as [
    number,
    number,
    number,
  ];
  const chats: SpanPlan[] = chatsAll.slice(0, keepChats).map((r) => {
    const asked = r.modelAsked ? s(r.modelAsked) : null;
    const served = r.modelServed ? s(r.modelServed) : null;
    const a: Attrs = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider,
      ...conversation,
      ...serverOf(r.upstream),
      "http.response.status_code": r.status,
    };
    // A fallback hop or a retry is said; the common case carries neither (each attribute costs its encoding).
    if (r.hop) a["lazy.proxy.hop"] = r.hop;
    if (r.retries) a["lazy.proxy.retries"] = r.retries;
    if (asked) a["gen_ai.request.model"] = asked;
    if (served) a["gen_ai.response.model"] = served;
    if (r.usage) {
      a["gen_ai.usage.input_tokens"] = r.usage.input;
      a["gen_ai.usage.output_tokens"] = r.usage.output;
      a["gen_ai.usage.cache_read.input_tokens"] = r.usage.cacheRead;
      a["gen_ai.usage.cache_creation.input_tokens"] = r.usage.cacheWrite;
    }
    // lazy's own time on the model path (store.ts Row): before the request left, and after the answer's head came.
    if (r.lazyInMs !== null) a["lazy.proxy.own_in_ms"] = r.lazyInMs;
    if (r.lazyOutMs !== null) a["lazy.proxy.own_out_ms"] = r.lazyOutMs;
    if (r.lazyInMs !== null || r.lazyOutMs !== null) a["lazy.proxy.own_ms"] = (r.lazyInMs ?? 0) + (r.lazyOutMs ?? 0);
    if (r.ttfbMs !== null) a["lazy.proxy.ttfb_ms"] = r.ttfbMs;
    const error = r.status >= 400 ? String(r.status) : undefined;
    if (error) a["error.type"] = error;
    return {
      name: asked ? `chat ${asked}` : "chat",
      kind: "client",
      start: r.at,
      end: r.at + r.durationMs,
      attributes: a,
      error,
      children: [],
    };
  });
  // A tool call goes under the model call whose answer asked for it: the last one answered before
  // lazy read the call from the harness's events (read every 200 ms, so this is as close as lazy knows).
  const byEnd = [...chats].sort((a, b) => a.end - b.end);
  const parentAt = (at: number): SpanPlan | undefined => {
    let lo = 0;
    let hi = byEnd.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byEnd[mid]!.end <= at) lo = mid + 1;
      else hi = mid;
    }
    return lo ? byEnd[lo - 1] : undefined;
  };
  const tools: SpanPlan[] = [];
  const loose: SpanPlan[] = [];
  const outputs = new Map<string, TaskEvent>();
  for (const e of t.events) if (e.kind === "output" && typeof e.data.id === "string") outputs.set(e.data.id, e);
  for (const e of toolsAll.slice(0, keepTools)) {
    const at = Date.parse(e.at);
    const id = typeof e.data.id === "string" ? e.data.id : undefined;
    const out = id ? outputs.get(id) : undefined;
    const name = s(String(e.data.name ?? "tool"));
    const a: Attrs = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.type": "function", ...conversation };
    if (id) a["gen_ai.tool.call.id"] = s(id);
    const error = out?.data.error === true ? "tool_error" : undefined;
    if (error) a["error.type"] = error;
    const span: SpanPlan = {
      name: `execute_tool ${name}`,
      kind: "internal",
      start: at,
      end: Math.max(at, out ? Date.parse(out.at) : at),
      attributes: a,
      error,
      children: [],
    };
    tools.push(span);
    const parent = parentAt(at);
    if (parent) parent.children.push(span);
    else loose.push(span);
  }
  const top: SpanPlan[] = [...chats, ...loose];
  // MCP tool calls lazy's bridge served: under the harness's call of the same tool when one spans it.
  // The harness's calls of MCP tools (`mcp__server__tool`), by the tool's own name.
  const calls = new Map<string, SpanPlan[]>();
  for (const x of tools) {
    const n = String(x.attributes["gen_ai.tool.name"]);
    const k = n.lastIndexOf("__");
    if (n.startsWith("mcp__") && k > 4) calls.set(n.slice(k + 2), [...(calls.get(n.slice(k + 2)) ?? []), x]);
  }
  for (const r of mcpsAll.slice(0, keepMcps)) {
    const name = s(r.note!.slice("tools/call ".length));
    const a: Attrs = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": name,
      "gen_ai.tool.type": "extension",
      "mcp.method.name": "tools/call",
      ...conversation,
    };
    const error = r.status >= 400 ? String(r.status) : undefined;
    if (error) a["error.type"] = error;
    const span: SpanPlan = {
      name: `execute_tool ${name}`,
      kind: "internal",
      start: r.at,
      end: r.at + r.durationMs,
      attributes: a,
      error,
      children: [],
    };
    const host = (calls.get(name) ?? []).find((x) => x.start <= r.at + 250 && x.end >= r.at - 250);
    if (host) host.children.push(span);
    else (parentAt(r.at)?.children ?? top).push(span);
  }
  const egress = rows.filter(isEgress);
  const events = egress.slice(0, MAX_EGRESS).map((r) => ({
    name: "lazy.egress",
    at: r.at,
    attributes: {
      ...serverOf(s(r.upstream)),
      "http.request.method": s(r.method),
      "http.response.status_code": r.status,
      "lazy.egress.decision": r.status < 400 ? "allowed" : "refused",
      ...(r.role === "broker" ? { "lazy.egress.brokered": true } : {}),
      // The reason, never a path or a query: lazy's own words, cut before any `?`.
      ...(r.note ? { "lazy.egress.reason": s(r.note.split("?")[0]!) } : {}),
    } as Attrs,
  }));
  const usage = chatsAll.reduce((u, r) => (r.usage ? { input: u.input + r.usage.input, output: u.output + r.usage.output } : u), {
    input: 0,
    output: 0,
  });
  const firstModel = chatsAll.find((r) => r.modelAsked)?.modelAsked;
  const attributes: Attrs = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.provider.name": provider,
    "gen_ai.agent.name": t.harness,
    ...conversation,
    "gen_ai.usage.input_tokens": usage.input,
    "gen_ai.usage.output_tokens": usage.output,
    "lazy.task.ref": s(t.taskRef),
    "lazy.turn": t.turn,
    "lazy.task.status": t.to,
  };
  if (firstModel) attributes["gen_ai.request.model"] = s(firstModel);
  const chatsCut = chatsAll.length - keepChats;
  const toolsCut = toolsAll.length - keepTools + mcpsAll.length - keepMcps;
  if (chatsCut) attributes["lazy.spans.chat_dropped"] = chatsCut;
  if (toolsCut) attributes["lazy.spans.tool_dropped"] = toolsCut;
  if (egress.length > MAX_EGRESS) attributes["lazy.egress.events_dropped"] = egress.length - MAX_EGRESS;
  const error = t.to === "failed" ? "turn_failed" : undefined;
  if (error) attributes["error.type"] = error;
  return {
    name: `invoke_agent ${t.harness}`,
    kind: "internal",
    start: t.start,
    end: Math.max(t.start, t.end),
    attributes,
    error,
    events,
    children: top.sort((a, b) => a.start - b.start),
    ...(chatsCut + toolsCut ? { cut: chatsCut + toolsCut } : {}),
  };
}
