import { watchLine } from "../../lines";
import { LazyError } from "../../util/errors";
import { findProjectRoot } from "../../util/paths";
import type { WatchItem } from "../../watch";
import * as Client from "../client";
import { command, print } from "../command";

/** Every `--task X` / `--task=X` given (citty keeps only the last). */
function taskFlags(raw: string[]): string[] | null {
  const out: string[] = [];
  let any = false;
  for (let i = 0; i < raw.length; i++) {
    const a = raw[i]!;
    if (a === "--task") {
      any = true;
      out.push(raw[i + 1] ?? "");
      i++;
    } else if (a.startsWith("--task=")) {
      any = true;
      out.push(a.slice("--task=".length));
    }
  }
  return any ? out : null;
}

export const watch = command({
  meta: {
    name: "watch",
    description:
      "Follow every task's events and the proxy's traffic (net> lines), live. An answered call of lazy's MCP tools is the agent's tool event, not a net> line (--json has every request)",
  },
  args: {
    task: { type: "string", description: "Only this task (repeatable; a code matched exactly, or ≥ 4 hex chars of its id)" },
    since: { type: "string", description: "Start with what happened since then: 30s, 10m, 2h, 1d, or an ISO time" },
    json: { type: "boolean", description: "One JSON object a line on stdout" },
  },
  async run({ args, rawArgs }) {
    const c = await Client.connect(findProjectRoot());
    const q = new URLSearchParams();
    for (const t of taskFlags(rawArgs) ?? []) q.append("task", t);
    if (taskFlags(rawArgs)?.length === 0) q.append("task", "");
    if (args.since) q.set("since", args.since);
    await c.request("GET", "/api/status"); // finds (or starts) the daemon before the stream opens
    const res = await c.send("GET", `/api/watch?${q}`, undefined, 0);
    if (!res.ok) throw LazyError.fromJSON(await res.json().catch(() => undefined), `The daemon answered ${res.status} to lazy watch.`);
    const stop = () => process.exit(0);
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    const dec = new TextDecoder();
    let buf = "";
    for await (const chunk of res.body!) {
      buf += dec.decode(chunk, { stream: true });
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!text) continue;
        if (args.json) {
          print(text);
          continue;
        }
        const item = JSON.parse(text) as WatchItem;
        const l = watchLine(item);
        if (l === null) continue;
        print(l);
      }
    }
    throw new LazyError("daemon_unavailable", "The daemon ended the watch (it stopped or restarted); run lazy watch again.");
  },
});
