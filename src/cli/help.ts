/**
 * Help as gh and kubectl give it: citty's rendering of a command (its usage, arguments and
 * options), wrapped to the terminal's width with a hanging indent, hidden commands left out,
 * then an EXAMPLES section; and "did you mean" for a mistyped command.
 */
import { renderUsage, type CommandDef } from "citty";
import { stripAnsi } from "./terminal";

/** Examples per command path: what a person types most often, each with what it does. */
const EXAMPLES: Record<string, string[]> = {
  "": [
    'lazy run "fix the failing test in src/auth"      # one task, wait, print the result (CI)',
    'lazy task add "add a --dry-run flag" --code dry  # add a task, then: lazy start dry',
    "lazy watch                                       # every task and the proxy's traffic, live",
    "lazy help start                                  # help on one command",
  ],
  run: [
    'lazy run "make the linter pass"',
    "lazy run --file prompt.md --profile codex --json",
    "git diff | lazy run -   # the prompt from standard input (at most 100 KiB)",
  ],
  start: ["lazy start fix-login", "lazy start fix-login --json"],
  send: [
    'lazy send fix-login "also cover the logout path"',
    "lazy send fix-login --file review.md",
    "cat notes.txt | lazy send fix-login -",
  ],
  "task add": [
    'lazy task add "fix the login form" --code fix-login',
    "lazy task add --file prompt.md --profile codex",
    "cat issue.md | lazy task add - --code issue-42",
  ],
  accept: [
    "lazy diff fix-login --stat && lazy accept fix-login",
    "lazy accept fix-login --with-config   # the branch changes lazy.toml or a harness folder",
  ],
  diff: ["lazy diff fix-login", "lazy diff fix-login --stat", "lazy diff fix-login --json | jq '.files[].path'"],
  watch: ["lazy watch", "lazy watch --json | jq 'select(.kind == \"status\")'"],
  trust: ["lazy trust          # approve lazy.toml as it is now", "lazy trust --show   # what is trusted"],
  stop: ['lazy stop fix-login   # the task waits; lazy send fix-login "…" goes on'],
  compare: [
    'lazy run --profiles claude,codex "fix the flaky test" --code flaky   # best-of-N, then the comparison',
    'lazy task add --n 3 --profile claude "speed up the build" --code fast   # three candidates, not started',
    "lazy compare flaky             # side by side; runs [review] check on candidates without a verdict",
    "lazy accept flaky-claude       # merges it, closes the other candidates",
  ],
  reject: ["lazy reject fix-login        # asks y/N on a terminal", "lazy reject fix-login --yes  # in scripts"],
};

/** The terminal's width (COLUMNS when piped), between 40 and 120 columns. */
export function width(): number {
  const cols = process.stdout.columns || Number(process.env.COLUMNS) || 100;
  return Math.max(40, Math.min(120, cols));
}

/**
 * One line folded at `max` columns: a table row (name, 2+ spaces, description) continues under
 * its description; any other line under its own indent. Measured without escapes; a folded line
 * loses its colour (a library's codes cannot be split safely).
 */
export function wrapLine(line: string, max: number): string[] {
  const plain = stripAnsi(line).replace(/\s+$/, "");
  if (plain.length <= max) return [line.replace(/\s+$/, "")];
  const row = /^(\s*\S+(?: \S+)*?\s{2,})\S/.exec(plain);
  const indent = row && row[1]!.length < max / 2 ? row[1]!.length : (/^\s*/.exec(plain)?.[0].length ?? 0);
  const out: string[] = [];
  let rest = plain;
  let first = true;
  while (rest.length > max) {
    let cut = rest.lastIndexOf(" ", max);
    if (cut <= indent) cut = max;
    out.push(rest.slice(0, cut).replace(/\s+$/, ""));
    rest = " ".repeat(indent) + rest.slice(cut).replace(/^\s+/, "");
    first = false;
  }
  if (rest.trim() || first) out.push(rest);
  return out;
}

/** The help of `cmd` (at `path`), wrapped, with its examples. */
export async function helpText(cmd: CommandDef<any>, parent: CommandDef<any> | undefined, path: string[]): Promise<string> {
  // A command's meta name is its path ("task list"): citty prefixes the parent's, so the
  // parent it is shown is lazy itself ("lazy task list", not "task task list").
  const usage = await renderUsage(cmd, parent ? { meta: { name: "lazy" } } : undefined);
  const max = width();
  const lines = usage
    .split("\n")
    // A list of subcommands too long for the line reads as <command>: COMMANDS lists them.
    .map((l) => (stripAnsi(l).length > max && /^USAGE /.test(stripAnsi(l)) ? stripAnsi(l).replace(/ \S*\|\S*/, " <command>") : l))
    .flatMap((l) => wrapLine(l, max));
  const examples = EXAMPLES[path.join(" ")];
  // Examples are not folded: each is a line to copy.
  if (examples?.length) lines.push("", "EXAMPLES", "", ...examples.map((e) => `  ${e}`));
  return lines.join("\n").replace(/\n{3,}/g, "\n\n");
}

/** Damerau-Levenshtein distance (a swap of two neighbours is one edit: strat → start). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  return d[a.length]![b.length]!;
}

/** The names close to `word` (at most 2 edits, fewer for short words, or a prefix), closest first. */
export function suggest(word: string, names: string[]): string[] {
  const w = word.toLowerCase();
  const limit = w.length <= 3 ? 1 : 2;
  return names
    .map((n) => ({ n, d: n.startsWith(w) && w.length >= 2 ? 0.5 : distance(w, n) }))
    .filter((x) => x.d <= limit)
    .sort((a, b) => a.d - b.d)
    .map((x) => x.n);
}
