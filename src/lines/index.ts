/**
 * How lazy prints what happened, as text: a task's events (lazy logs, lazy run, lazy watch,
 * the dashboard) and the proxy's traffic (`net>` lines). One place, so they read the same
 * wherever they appear: a leaf folder (type imports only), so the dashboard's browser bundle
 * takes it as the CLI does.
 */
import type { TaskEvent } from "../store";
import type { WatchItem } from "../watch";

/** Under the time (`12:34:56  `): where a line's continuation starts. */
const CONTINUED = `\n${" ".repeat(10)}`;
/** Every line break a terminal or a browser honours: an agent's text is split (or shown) at each. */
export const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g;

/**
 * One event as text. An agent's text (a message, a progress note, a summary) may hold line
 * breaks: every line after the first is indented under the time, so none can start where a
 * line of lazy's own does (a forged "12:34:56  -- running → done" stays indented text).
 */
export function line(e: Pick<TaskEvent, "at" | "kind" | "data">): string {
  return eventText(e).replace(LINE_BREAK, CONTINUED);
}

function eventText(e: Pick<TaskEvent, "at" | "kind" | "data">): string {
  const d = e.data as Record<string, any>;
  const t = e.at.slice(11, 19);
  switch (e.kind) {
    case "message":
      return `${t}  ${d.text}`;
    case "user":
      return `${t}  > ${d.text}`;
    case "tool":
      return `${t}  [${d.name}] ${d.input}`;
    case "output": {
      // Under its call: every line of it two more columns in, so none reads as lazy's own.
      const text = String(d.text ?? "").replace(/\s+$/, "");
      return `${t}  └ ${d.error ? "(error) " : ""}${text === "" ? "(no output)" : text.split(LINE_BREAK).join("\n  ")}`;
    }
    case "result":
      return `${t}  ${d.ok ? "result" : "FAILED"}: ${d.text}`;
    case "created":
      return `${t}  -- created (${d.status ?? "queued"})`;
    case "engine":
      return `${t}  -- connecting to the Docker engine at ${d.connecting}`;
    case "setup":
      if (d.command !== undefined) return `${t}  -- [container] setup: ${d.command}`;
      return `${t}  -- setup exited ${d.code}${d.output ? `\n  ${String(d.output).replace(/\s+$/, "").split(LINE_BREAK).join("\n  ")}` : ""}`;
    case "build":
      if (d.rebuild) return `${t}  -- ${d.image} is out of date: ${d.rebuild}`;
      if (d.image) return `${t}  -- building ${d.what ?? "the task image"} as ${d.image}`;
      if (d.done) return `${t}  -- built ${d.done}`;
      return `${t}  -- build: ${d.progress ?? d.output ?? ""}`;
    case "usage":
      return `${t}  tokens: ${d.input} in, ${d.output} out, ${d.cacheRead} cache read, ${d.cacheWrite} cache write`;
    case "status":
      // `task`: the task's code or id, recorded with the question (an older event has none: the placeholder then).
      if (d.reason === "question")
        return `${t}  -- ${d.from} → ${d.to}: waiting for your answer (lazy send ${d.task ?? "TASK"} "…"): ${d.question}`;
      if (d.reason === "budget") return `${t}  -- ${d.from} → ${d.to}: ${d.detail}`;
      if (d.reason === "max_running") return `${t}  -- ${d.from} → ${d.to}: ${slotText(d)}`;
      if (d.reason === "usage_pause")
        return `${t}  -- ${d.from} → ${d.to}: held by [usage_pause] (${d.credential}: ${d.detail}) until ${d.resetsAt}`;
      // `by`: who accepted, rejected or closed it (runner endings.ts `Actor`).
      return `${t}  -- ${d.from} → ${d.to}${d.by?.user ? ` by ${d.by.user} (${d.by.via})` : ""}${d.result ? "" : d.error ? `: ${d.error}` : ""}`;
    case "queued":
      return `${t}  -- queued: ${slotText(d)}`;
    case "held":
      return `${t}  -- turn held by [usage_pause] (${d.credential}: ${d.detail}) until ${d.resetsAt}`;
    case "progress":
      return `${t}  .. ${d.text}`;
    case "progress_dropped":
      return `${t}  .. ${d.dropped} progress note(s) dropped: past ${d.perMinute} a minute`;
    case "calls_refused":
      return `${t}  .. ${d.refused} ${d.tool} call(s) refused: past ${d.perTurn} a turn or ${d.perMinute} a minute`;
    case "question":
      return `${t}  ?? asks: ${d.text}`;
    case "finish":
      return `${t}  == summary: ${d.summary}`;
    case "memory":
      return `${t}  remembers (note ${d.id}): ${d.text}`;
    case "refused":
      return `${t}  !! refused: ${d.reason}`;
    case "broker":
      return `${t}  !! service ${d.service}: ${d.what}`;
    case "stop":
      return `${t}  -- stopped by ${d.by}`;
    case "dropped":
      return `${t}  !! dropped ${d.events} event(s) and ${d.bytes} unread byte(s): ${d.reason}`;
    case "summary":
      return `${t}  accepted ${d.commits?.length ?? 0} commit(s) from ${d.branch}${(d.commits ?? []).map((c: string) => `\n${c}`).join("")}`;
    case "review":
      return `${t}  review: ${Array.isArray(d.comments) ? d.comments.length : 0} comment(s) sent as the next turn`;
    case "check":
      return `${t}  check ${d.ok ? "passed" : `FAILED (exit ${d.code})`}: ${d.command}${d.error ? ` (${d.error})` : ""}`;
    default:
      return `${t}  ${e.kind} ${JSON.stringify(d)}`;
  }
}

/** One counted line of refusals: "21:10 refused 105,000 requests from 10.213.4.2: no credential (401)" (the minute in UTC, as rows' times). */
export function refusedText(l: {
  minute: number | string;
  count: number;
  source: string;
  reason: string;
  status: number;
  taskRef?: string | null;
}): string {
  const when = new Date(l.minute).toISOString().slice(11, 16);
  const n = `${l.count.toLocaleString("en-US")} request${l.count === 1 ? "" : "s"}`;
  const whose = l.taskRef ? ` (presenting task ${l.taskRef}'s placeholder)` : "";
  return `${when} refused ${n} from ${l.source}: ${l.reason} (${l.status})${whose}`;
}

/** Why a turn is queued ([limits] max_running), as every surface says it. */
export const slotText = (d: Record<string, any>): string =>
  `${d.running} of [limits] max_running = ${d.max} turns run now; this one starts by itself when one ends (place ${d.place} in the queue)`;

/** A task as a watch line names it: its code, or the first 8 characters of its id. */
export const tag = (t: { id: string; code: string | null } | null): string => (t ? (t.code ?? t.id.slice(0, 8)) : "-");

/** The path of lazy's own MCP route in the audit (proxy/mcp-bridge/names.ts MCP_PATH; a leaf folder imports no values). */
const MCP_PATH = "/mcp";

/**
 * An MCP request that is the client's bookkeeping, not a failure: the SDK's session probes.
 * lazy's MCP server is stateless, so a client's GET for a server-sent stream (and a DELETE of its
 * session) is answered 405, and a POST the stateless transport will not take (a session it never
 * gave) 400; the client goes on with plain POSTs. Shown muted, never as an error.
 */
export const mcpBookkeeping = (r: { path: string; method: string; status: number }): boolean =>
  r.path === MCP_PATH && (r.status === 405 || (r.method === "POST" && r.status === 400));

/**
 * One `lazy watch` item as a line; null for an item not shown as text. An agent's call of lazy's
 * own MCP tools that was answered is not a net> line: it is already one of the agent's events
 * (`[mcp__lazy__task_list] …`), and an agent polling a tool would fill the screen with one line
 * per poll. A refused or failed MCP request is shown; `lazy watch --json` and `lazy stats audit`
 * keep every request.
 */
export function watchLine(item: WatchItem): string | null {
  switch (item.type) {
    case "hello":
      return item.proxy ? `-- watching; ${item.proxy}: no net> lines until it is back` : null;
    case "dropped":
      return `-- ${item.count} line(s) dropped: this terminal fell behind`;
    case "refused":
      return `${item.at.slice(11, 19)}  ${tag(item.task)}  net> ${refusedText({ ...item, source: item.from })}`;
    case "expiry":
      return `-- ${item.expired ? "EXPIRED" : "expiring"}: ${item.message}`;
    case "event":
      return line(item).replace(/^(\S+) {2}/, (_, t: string) => `${t}  ${tag(item.task)}  `);
    case "net": {
      if (item.path === MCP_PATH && item.status < 400 && !item.refused) return null;
      const t = item.at.slice(11, 19);
      const tokens = item.input !== null ? `  ${item.input} in/${item.output} out` : "";
      const why = item.refused ? `  REFUSED: ${item.refused}` : item.note && item.status >= 400 ? `  (${item.note})` : "";
      // A fallback's hop names where it went (a row per hop: the failed ones say why above).
      const hop = item.hop ? `  [fallback hop ${item.hop}: ${item.upstream}]` : "";
      return `${t}  ${tag(item.task)}  net> ${item.role ?? "-"} ${item.profile ?? "-"} ${item.method} ${item.path} ${item.status} ${item.durationMs}ms${tokens}${hop}${why}`;
    }
  }
}

/** What a figure of spending needs for its dollars (spending/budget.ts Spent). */
export interface Cost {
  usd: number | null;
  knownUsd: number;
  unpriced: string[];
  /** Its tokens, when known: none at all reads "–" (nothing ran), not $0.0000. */
  tokens?: number;
}

/**
 * Dollars as people read them, naming what has no price: "$0.1234", "$0.12 + no price known
 * for MODEL" or "no price known for MODEL" — never a dash or $0 that hides a model lazy cannot
 * price; "–" only for nothing spent at all (a candidate that never ran). `fine`: four decimals
 * below a dollar. The CLI and the dashboard both write cost with this, nowhere else.
 */
export function costText(c: Cost, fine = false): string {
  const money = (n: number) => `$${n.toFixed(fine && n < 1 ? 4 : 2)}`;
  if (c.tokens === 0 && !c.unpriced.length) return "–";
  if (!c.unpriced.length) return money(c.usd ?? c.knownUsd);
  const named = c.unpriced.filter(Boolean);
  const why = [named.length ? `no price known for ${named.join(", ")}` : "", c.unpriced.includes("") ? "tokens of no named model" : ""]
    .filter(Boolean)
    .join("; ");
  return c.knownUsd > 0 ? `${money(c.knownUsd)} + ${why}` : why;
}
