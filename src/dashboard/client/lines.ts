/**
 * Event lines as `lazy logs` and `lazy watch` print them: a port of src/cli/lines.ts (the CLI's
 * module cannot be bundled from here without going around the cli folder's way in). The suite
 * (test/dashboard/lines.test.ts) holds the two to the same output for every kind.
 */
type Data = Record<string, any>;
export interface EventLike {
  at: string;
  kind: string;
  data: Data;
}
export interface TaskTag {
  id: string;
  code: string | null;
}
export type Item =
  | { type: "hello"; at: string; proxy: string | null }
  | ({ type: "event"; task: TaskTag; id: number } & EventLike)
  | {
      type: "net";
      at: string;
      task: TaskTag | null;
      role: string | null;
      profile: string | null;
      method: string;
      path: string;
      status: number;
      durationMs: number;
      input: number | null;
      output: number | null;
      refused: string | null;
      note: string | null;
    }
  | { type: "dropped"; at: string; count: number };

export function line(e: EventLike): string {
  const d = e.data;
  const t = e.at.slice(11, 19);
  switch (e.kind) {
    case "message":
      return `${t}  ${d.text}`;
    case "user":
      return `${t}  > ${d.text}`;
    case "tool":
      return `${t}  [${d.name}] ${d.input}`;
    case "result":
      return `${t}  ${d.ok ? "result" : "FAILED"}: ${d.text}`;
    case "usage":
      return `${t}  tokens: ${d.input} in, ${d.output} out, ${d.cacheRead} cache read, ${d.cacheWrite} cache write`;
    case "status":
      if (d.reason === "usage_pause")
        return `${t}  -- ${d.from} → ${d.to}: held by [usage_pause] (${d.credential}: ${d.detail}) until ${d.resetsAt}`;
      return `${t}  -- ${d.from} → ${d.to}${d.result ? "" : d.error ? `: ${d.error}` : ""}`;
    case "held":
      return `${t}  -- turn held by [usage_pause] (${d.credential}: ${d.detail}) until ${d.resetsAt}`;
    case "refused":
      return `${t}  !! refused: ${d.reason}`;
    case "stop":
      return `${t}  -- stopped by ${d.by}`;
    case "summary":
      return `${t}  accepted ${d.commits?.length ?? 0} commit(s) from ${d.branch}${(d.commits ?? []).map((c: string) => `\n          ${c}`).join("")}`;
    default:
      return `${t}  ${e.kind} ${JSON.stringify(d)}`;
  }
}

export const tag = (t: TaskTag | null): string => (t ? (t.code ?? t.id.slice(0, 8)) : "-");

export function watchLine(item: Item): string | null {
  switch (item.type) {
    case "hello":
      return item.proxy ? `-- watching; ${item.proxy}: no net> lines until it is back` : null;
    case "dropped":
      return `-- ${item.count} line(s) dropped: this terminal fell behind`;
    case "event":
      return line(item).replace(/^(\S+) {2}/, (_, t: string) => `${t}  ${tag(item.task)}  `);
    case "net": {
      const t = item.at.slice(11, 19);
      const tokens = item.input !== null ? `  ${item.input} in/${item.output} out` : "";
      const why = item.refused ? `  REFUSED: ${item.refused}` : item.note && item.status >= 400 ? `  (${item.note})` : "";
      return `${t}  ${tag(item.task)}  net> ${item.role ?? "-"} ${item.profile ?? "-"} ${item.method} ${item.path} ${item.status} ${item.durationMs}ms${tokens}${why}`;
    }
  }
}
