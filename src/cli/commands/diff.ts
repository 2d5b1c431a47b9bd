/**
 * `lazy diff T`: what the task's agent changed, read from the command line — its branch
 * (lazy/<ref>) against where it forked from the project's branch, the very diff the dashboard
 * shows (diff/diff.ts through the daemon: host-side hardened git in the project root, no
 * external diff or textconv). File names and lines are the agent's: shown through visible(), so
 * a control byte in them is shown, never obeyed by the terminal.
 */

import type { Diff } from "../../diff";
import { findProjectRoot } from "../../util/paths";
import * as Client from "../client";
import { command, print, printJson } from "../command";
import { out } from "../out";
import { colours, visible } from "../terminal";

export type TaskDiff = Diff & { task: { id: string; code: string | null; status: string } };

/** The diff (or with `stat`, only its files and counts) of a task, from the daemon. */
export const fetchDiff = (c: Client.Client, ref: string, stat: boolean) =>
  c.request<TaskDiff>("GET", `/api/tasks/${encodeURIComponent(ref)}/diff${stat ? "?stat=1" : ""}`);

/** One line a file, like `git diff --stat` (counts in numbers: an agent's change can be long), then the totals. */
export function statLines(d: Diff): string[] {
  const width = Math.min(60, Math.max(0, ...d.files.map((f) => visible(f.path).length)));
  const lines = d.files.map((f) => ` ${visible(f.path).padEnd(width)} | ${f.binary ? "binary" : `+${f.added} -${f.removed}`}`);
  if (d.total.files > d.files.length)
    lines.push(` … and ${d.total.files - d.files.length} more file(s) (lazy diff --json lists what is shown)`);
  lines.push(` ${d.total.files} file(s) changed, +${d.total.added} -${d.total.removed}`);
  return lines;
}

/** Where the diff stands: branch, base and tip, as lazy task show and lazy diff say it. */
export const heading = (d: Diff) =>
  `${d.branch}${d.base ? ` against ${d.base.slice(0, 12)}` : ""}${d.tip ? ` (tip ${d.tip.slice(0, 12)})` : ""}`;

/** The files and hunks, coloured on a terminal; the agent's text shown through visible(). */
export function printPatch(d: Diff): void {
  const colour = colours(process.stdout);
  const paint = (code: string, s: string) => (colour ? `\x1b[${code}m${s}\x1b[0m` : s);
  let text = "";
  for (const f of d.files) {
    const path = visible(f.path);
    text += `${paint("1", `diff ${path}`)}\n`;
    if (f.binary) text += "Binary file changed\n";
    for (const h of f.hunks) {
      text += `${paint("36", visible(h.header))}\n`;
      for (const l of h.lines) {
        const v = visible(l);
        text += `${l[0] === "+" ? paint("32", v) : l[0] === "-" ? paint("31", v) : v}\n`;
      }
    }
  }
  out(text);
}

export const diff = command({
  meta: { name: "diff", description: "Show what a task's agent changed: its branch against where it forked from the project's branch" },
  args: {
    task: { type: "positional", description: "Task code or hex id prefix (≥ 4 chars)", required: true },
    stat: { type: "boolean", description: "Only the files changed and their line counts" },
    json: { type: "boolean", description: "Print JSON on stdout (files, counts, hunks)" },
  },
  async run({ args }) {
    const c = await Client.connect(findProjectRoot());
    const d = await fetchDiff(c, args.task, !!args.stat);
    if (args.json) return printJson(d);
    print(heading(d));
    if (d.note) print(d.note);
    if (!d.files.length) return;
    if (args.stat) return print(statLines(d).join("\n"));
    printPatch(d);
    if (d.cut) print(`(cut: the diff passed lazy's limit; later files show no hunks; lazy diff ${args.task} --stat counts them all.)`);
  },
});
