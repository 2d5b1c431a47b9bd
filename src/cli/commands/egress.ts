/**
 * `lazy egress suggest`: an allowlist from what task containers reached through lazy's egress
 * proxy (the audit trail's `egress:host:port` rows), for `[container] allow` in lazy.toml.
 * Run a while with `network = "observe"` (every host allowed and recorded), then switch to
 * "allowlist" with what this prints. Refused hosts are listed too, marked, so a person can see
 * what tasks tried under the allowlist. Reads the latest 10,000 rows of the trail.
 */

import { type AllowEntry, allows, DEFAULT_ALLOW, load, parseAllow } from "../../config";
import type { AuditRow } from "../../proxy";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, print, printJson } from "../command";

interface Seen {
  entry: string;
  connections: number;
  refused: number;
  bytes: number;
  allowed: "built-in" | "allow" | null;
}

const suggest = command({
  meta: { name: "egress suggest", description: "Propose [container] allow entries from the hosts tasks reached through the egress proxy" },
  args: { json: { type: "boolean", description: "Print JSON on stdout" } },
  async run({ args }) {
    const root = findProjectRoot();
    const c = await Client.connect(root);
    const r = await c.request<{ rows: AuditRow[] }>("GET", "/api/stats/audit?limit=10000");
    const loaded = load(root);
    const entries = (xs: readonly string[]) => xs.map(parseAllow).filter((e): e is AllowEntry => !("error" in e));
    const own = loaded.ok ? entries(loaded.config.container.allow) : [];
    const builtIn = loaded.ok && !loaded.config.container.allow_defaults ? [] : entries(DEFAULT_ALLOW);
    const seen = new Map<string, Seen>();
    for (const row of r.rows) {
      const m = /^egress:(.+):(\d+)$/.exec(row.upstream);
      if (row.role !== "egress" || !m) continue;
      const [host, port] = [m[1]!, Number(m[2])];
      const entry = port === 443 || port === 80 ? host : `${host}:${port}`;
      const s = seen.get(entry) ?? {
        entry,
        connections: 0,
        refused: 0,
        bytes: 0,
        allowed: own.some((e) => allows(e, host, port)) ? "allow" : builtIn.some((e) => allows(e, host, port)) ? "built-in" : null,
      };
      s.connections++;
      if (row.status >= 400) s.refused++;
      s.bytes += row.bytesIn + row.bytesOut;
      seen.set(entry, s);
    }
    const list = [...seen.values()].sort((a, b) => b.connections - a.connections || a.entry.localeCompare(b.entry));
    if (args.json) return printJson({ hosts: list, suggest: list.filter((s) => !s.allowed).map((s) => s.entry) });
    if (!list.length) {
      print(
        'No connections through the egress proxy recorded. Set [container] network = "observe" in lazy.toml, run tasks, then ask again.',
      );
      return;
    }
    const width = Math.max(...list.map((s) => s.entry.length));
    for (const s of list)
      print(
        `${s.entry.padEnd(width)}  ${s.connections} connection(s)${s.refused ? `, ${s.refused} refused` : ""}  ${(s.bytes / 1e6).toFixed(1)} MB  ${s.allowed ? `(allowed: ${s.allowed})` : ""}`,
      );
    const add = list.filter((s) => !s.allowed).map((s) => s.entry);
    print(
      add.length
        ? `\nTo allow the rest, in lazy.toml:\n[container]\nallow = [${[...(loaded.ok ? loaded.config.container.allow : []), ...add].map((e) => JSON.stringify(e)).join(", ")}]`
        : "\nEvery host seen is already allowed.",
    );
  },
});

export const egress = command({
  meta: { name: "egress", description: "What task containers reach through lazy's egress proxy" },
  subCommands: { suggest },
});
