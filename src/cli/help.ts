/**
 * Help as gh and kubectl give it: citty's rendering of a command (its usage, arguments and
 * options), wrapped to the terminal's width with a hanging indent, hidden commands left out,
 * then an EXAMPLES section; and "did you mean" for a mistyped command.
 */
import { type CommandDef, renderUsage } from "citty";
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
    "lazy send fix-login --review comments.txt   # lines like: src/a.ts:12: rename this",
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
  init: ["lazy init          # a commented lazy.toml with every default", "lazy doctor        # then check it"],
  daemon: ["lazy daemon status", "lazy daemon restart   # after changing DOCKER_HOST or exporting a key"],
  "daemon status": ["lazy daemon status", "lazy daemon status --json | jq .proxy"],
  "daemon logs": ["lazy daemon logs -n 50", "lazy daemon logs -f --json | jq 'select(.level == \"error\")'"],
  "daemon start": ["lazy daemon start"],
  "daemon stop": ["lazy daemon stop"],
  "daemon restart": ["lazy daemon restart"],
  "daemon install": [
    "lazy daemon install           # a systemd user unit (launchd on macOS) that keeps it running",
    "lazy daemon install --print   # show the unit, change nothing",
  ],
  "daemon uninstall": ["lazy daemon uninstall"],
  task: ['lazy task add "fix the login form" --code fix-login', "lazy task list --status done", "lazy task show fix-login"],
  "task list": ["lazy task list", "lazy task list --status waiting", "lazy task list --json | jq -r '.[].code'"],
  "task show": ["lazy task show fix-login", "lazy task show fix-login --json | jq .summary"],
  "task budget": ["lazy task budget fix-login +100000   # tokens", "lazy task budget fix-login +5 --usd"],
  doctor: ["lazy doctor", "lazy doctor --json | jq '.findings[] | select(.ok | not)'"],
  dashboard: ["lazy dashboard                     # prints a signed-in link", 'xdg-open "$(lazy dashboard --json | jq -r .url)"'],
  auth: ["lazy auth set anthropic   # the key at a hidden prompt", "lazy auth list"],
  "auth set": [
    "lazy auth set anthropic                          # type the key at the hidden prompt",
    'printf %s "$OPENAI_API_KEY" | lazy auth set openai # or pipe it in',
  ],
  "auth list": ["lazy auth list", "lazy auth list --json"],
  "auth rm": ["lazy auth rm openai"],
  stats: ["lazy stats audit --task fix-login", "lazy stats budget --days 7"],
  "stats audit": ["lazy stats audit --limit 20", "lazy stats audit --task fix-login --json"],
  "stats limits": ["lazy stats limits"],
  "stats budget": ["lazy stats budget", "lazy stats budget --days 7 --json"],
  egress: ["lazy egress suggest   # allow entries from what tasks reached"],
  "egress suggest": ["lazy egress suggest", "lazy egress suggest --json"],
  chat: ["lazy chat", "lazy chat --profile codex -- --model o4-mini   # after --: the harness's own flags"],
  pair: ["lazy pair fix-login   # the agent's session, on the host, in the task's worktree"],
  logs: ["lazy logs fix-login", "lazy logs fix-login -f   # until the turn ends"],
  memory: ['lazy memory add "releases are tagged by hand"', "lazy memory list", "lazy memory rm 3"],
  "memory list": ["lazy memory list", "lazy memory list --json"],
  "memory add": ['lazy memory add "the API tests need REDIS_URL set"'],
  "memory rm": ["lazy memory rm 3"],
  ask: ['lazy ask "which tasks touched the login form?"', 'lazy ask --task fix-login "why did the last turn fail?"'],
  report: ["lazy report", "lazy report --since 24h > report.md"],
  build: ["lazy build                 # plan work as tasks with an agent", "lazy build --name sprint-3"],
  close: ["lazy close fix-login    # ends the session, keeps the branch"],
  prune: [
    "lazy prune --dry-run   # what ended tasks and old builds left, and the space it would free",
    "lazy prune             # remove it; tasks that can still run or be reviewed are never touched",
    "lazy prune --json",
  ],
  export: [
    "lazy export fix-login                        # lazy-export-fix-login.json here",
    "lazy export fix-login -o evidence.json --force",
  ],
  trace: ["lazy trace src/app.ts:42", "lazy trace src/app.ts:42 --json"],
  help: ["lazy help", "lazy help task add"],
  version: ["lazy version", "lazy version --json"],
  completion: [
    "source <(lazy completion bash)                                   # bash, now",
    `lazy completion zsh > "\${fpath[1]}/_lazy"                        # zsh, kept`,
    "lazy completion fish > ~/.config/fish/completions/lazy.fish     # fish, kept",
  ],
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
