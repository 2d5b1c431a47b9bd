/**
 * A review of a task's diff, as a code review reads: comments on lines of the diff, each naming
 * its file and line, sent to the agent as its next turn's message. One place for the comment
 * file's format (`lazy send T --review F`), for which lines a comment may name (those the diff
 * shows: a comment elsewhere is refused with the reason, nothing sent), and for the message the
 * agent gets. A leaf (no imports): the dashboard's browser bundle takes it as the daemon does.
 *
 * The file's format, one comment a line:
 *
 *     lib/a.ts:12: rename this            a line of the branch's version (added or unchanged)
 *     lib/a.ts:-7: why was this removed?  a line the branch removed (its number in the base)
 *       an indented line goes on with the comment above
 *     # a comment line, and blank lines, are skipped
 */

/** Which version a line number counts in: the branch's (`new`: added or unchanged lines) or the base's (`old`: removed lines). */
export type Side = "new" | "old";

export interface Comment {
  path: string;
  line: number;
  side: Side;
  text: string;
}

/** What a diff shows, as much as a review needs (diff/diff.ts's Diff fits). */
export interface ShownDiff {
  branch: string;
  files: { path: string; binary: boolean; hunks: { header: string; lines: string[] }[] }[];
}

/** The format as --help and errors say it. */
export const FORMAT =
  "one comment a line: `path:LINE: comment` for a line of the branch's version, `path:-LINE: comment` for a line it removed; an indented line goes on with the comment above; blank lines and lines starting with # are skipped";

/** Most comments one review may carry. */
export const MAX_COMMENTS = 500;

const COMMENT = /^(.+?):(-?)(\d+):(.*)$/;

/** The comments of a review file; `problems` names each line that is not one (`name:N: …`). */
export function parseFile(text: string, name: string): { comments: Comment[]; problems: string[] } {
  const comments: Comment[] = [];
  const problems: string[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() === "" || raw.trimStart().startsWith("#")) return;
    const last = comments.at(-1);
    if (/^\s/.test(raw)) {
      if (last) last.text += `\n${raw.trim()}`;
      else problems.push(`${name}:${i + 1}: an indented line goes on with a comment, and none comes before it`);
      return;
    }
    const m = COMMENT.exec(raw);
    const line = m ? Number(m[3]) : 0;
    if (!m || line < 1 || !m[4]!.trim()) {
      problems.push(`${name}:${i + 1}: not a comment (${FORMAT})`);
      return;
    }
    comments.push({ path: m[1]!, line, side: m[2] ? "old" : "new", text: m[4]!.trim() });
  });
  return { comments, problems };
}

/** Where a comment points, as the message and the refusals say it. */
export const where = (c: Pick<Comment, "path" | "line" | "side">) => `${c.path}:${c.line}${c.side === "old" ? " (removed)" : ""}`;

/** Each line a file's hunks show, by side and number (`new:12`, `old:7`), with its text. */
export function shownLines(hunks: ShownDiff["files"][number]["hunks"]): Map<string, string> {
  const out = new Map<string, string>();
  for (const h of hunks) {
    const m = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(h.header);
    if (!m) continue;
    let old = Number(m[1]);
    let now = Number(m[2]);
    for (const l of h.lines) {
      const c = l[0];
      if (c === "+") out.set(`new:${now++}`, l.slice(1));
      else if (c === "-") out.set(`old:${old++}`, l.slice(1));
      else if (c === " ") {
        out.set(`new:${now++}`, l.slice(1));
        old++;
      }
    }
  }
  return out;
}

/**
 * The comments checked against the diff: each with the line it names quoted, or every problem
 * (a file not in the diff, a line it does not show, an empty comment), one a comment.
 */
export function check(diff: ShownDiff, comments: readonly Comment[]): { ok: (Comment & { quote: string })[]; problems: string[] } {
  const problems: string[] = [];
  const ok: (Comment & { quote: string })[] = [];
  if (comments.length > MAX_COMMENTS) problems.push(`${comments.length} comments: one review carries at most ${MAX_COMMENTS}.`);
  const shown = new Map<string, Map<string, string>>();
  for (const c of comments.slice(0, MAX_COMMENTS)) {
    const file = diff.files.find((f) => f.path === c.path);
    if (!c.text.trim()) {
      problems.push(`${where(c)}: the comment is empty.`);
      continue;
    }
    if (!file) {
      problems.push(`${where(c)}: ${c.path} is not in the diff of ${diff.branch} (its changed files are what a review comments on).`);
      continue;
    }
    if (file.binary || !file.hunks.length) {
      problems.push(`${where(c)}: the diff shows no lines of ${c.path} (${file.binary ? "a binary file" : "past the diff's size limit"}).`);
      continue;
    }
    let lines = shown.get(c.path);
    if (!lines) {
      lines = shownLines(file.hunks);
      shown.set(c.path, lines);
    }
    const quote = lines.get(`${c.side}:${c.line}`);
    if (quote === undefined) {
      problems.push(`${where(c)}: not a line of the diff (${ranges(lines, c.side, c.path)}).`);
      continue;
    }
    ok.push({ ...c, quote });
  }
  return { ok, problems };
}

/** The line ranges of one side the diff shows, as a person would say them. */
function ranges(lines: Map<string, string>, side: Side, path: string): string {
  const nums = [...lines.keys()]
    .filter((k) => k.startsWith(`${side}:`))
    .map((k) => Number(k.slice(side.length + 1)))
    .sort((a, b) => a - b);
  if (!nums.length) return side === "old" ? `it removes no line of ${path}` : `it shows no line of the branch's ${path}`;
  const spans: string[] = [];
  let start = nums[0]!;
  let prev = start;
  for (const n of [...nums.slice(1), Number.NaN]) {
    if (n === prev + 1) {
      prev = n;
      continue;
    }
    spans.push(start === prev ? `${start}` : `${start}-${prev}`);
    start = prev = n;
  }
  const list = `${spans.slice(0, 8).join(", ")}${spans.length > 8 ? ", …" : ""}`;
  return side === "old" ? `the lines it removes from ${path} are ${list}, numbered as in the base` : `it shows lines ${list} of ${path}`;
}

const QUOTE_MAX = 200;

/** The next turn's message: each comment with its file and line and the line it is on, then a person's note if any. */
/** How a review's message begins (the runner tells a review turn from a lazy send by it). */
const HEAD = "Review of your changes on ";
export const isReview = (text: string) => text.startsWith(HEAD);

export function message(branch: string, comments: readonly (Comment & { quote: string })[], note?: string): string {
  const parts = [
    `${HEAD}${branch}: ${comments.length} comment(s), each on a line of the diff (path:LINE is a line of your version; "(removed)" a line you removed, numbered as in the base).`,
  ];
  for (const c of comments) {
    const q = c.quote.length > QUOTE_MAX ? `${c.quote.slice(0, QUOTE_MAX)}…` : c.quote;
    parts.push(`${where(c)}: ${c.text.replace(/\n/g, "\n  ")}\n    > ${q.trim() === "" ? "(an empty line)" : q}`);
  }
  if (note?.trim()) parts.push(note.trim());
  return parts.join("\n\n");
}
