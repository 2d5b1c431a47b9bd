/**
 * `lazy trace FILE:LINE`: which agent task wrote a line — its task, turn, model and tool call,
 * and the prompt or review comment that asked for the turn — from the commit's trace record
 * (src/provenance: git blame on the working tree's file, then the note under
 * refs/notes/agent-trace). Runs on the host alone: no daemon needed, and it works in any clone
 * that fetched the notes. A line no agent task wrote says so ("not written by an agent task").
 * Exit code 0 for both answers (--json says which: `agent`); 2 for a user error (no such file, a
 * line past its end), 1 when the record cannot be read or git takes over TRACE_MS. A record is
 * data (the agent's text, or a teammate's note): each field is one cut line, a tool input or a
 * prompt a block of a few indented lines (the rest counted), escape sequences dropped and every
 * other control byte shown (terminal.ts), so nothing in it is obeyed by the terminal or reads
 * as a line of lazy's.
 */
import { load } from "../../config";
import { LINE_BREAK } from "../../lines";
import * as Provenance from "../../provenance";
import { findProjectRoot } from "../../util/paths";
import { command, jsonArg, print, printJson } from "../command";
import { inert } from "../terminal";

/** Where a field's text starts (`  tool call  `): its further lines start there too. */
const UNDER = " ".repeat(13);

/** A record's value as text: a note is data (a teammate may have pushed it), not always the types lazy writes. */
const text = (v: unknown): string => (typeof v === "string" ? v : v === undefined || v === null ? "" : (JSON.stringify(v) ?? ""));

/** A name (a file, a model) on one line: a break in it is shown as \n, never a line of lazy's; control bytes are shown by print. */
const oneLine = (v: unknown) =>
  text(v).replace(LINE_BREAK, (c) =>
    c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\r\n" ? "\\r\\n" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/** Someone else's words on one line: escape sequences gone, breaks and control bytes shown, at most `max` columns. */
const cutLine = (v: unknown, max: number) => inert(oneLine(v), max);

/**
 * Someone else's words (a tool call's input, a prompt) as a block under its field: at most
 * `rows` lines of `max` columns, each made inert (terminal.ts), every one after the first
 * indented, so none can start where lazy's own lines do; the lines left out are counted.
 */
function block(v: unknown, rows: number, max: number): string {
  const whole = text(v);
  const shown = whole
    .slice(0, rows * max * 4)
    .split(LINE_BREAK)
    .slice(0, rows)
    .map((l) => inert(l, max));
  const more = whole.split(LINE_BREAK).length - shown.length;
  if (more > 0) shown.push(`… (${more} more line${more === 1 ? "" : "s"})`);
  return shown.join(`\n${UNDER}`);
}

/** The human reading of a traced line. */
function lines(t: Provenance.Traced): string[] {
  const spot = `${oneLine(t.file)}:${t.line}`;
  if (!t.agent)
    return [
      t.commit
        ? `${spot} was not written by an agent task: commit ${t.commit.slice(0, 12)} by ${cutLine(t.author?.name || "someone", 200)}${t.author?.date ? `, ${oneLine(t.author.date).slice(0, 10)}` : ""} has no trace record.`
        : `${spot} was not written by an agent task: it is not committed yet.`,
    ];
  const task = t.task
    ? `${text(t.task.code ?? t.task.id)}${t.task.code ? ` (${text(t.task.id)})` : ""}: ${text(t.task.title)}`
    : "(not named in the record)";
  const c = t.contributor;
  const out = [
    `${spot} was written by an agent task:`,
    `  task       ${cutLine(task, 300)}`,
    `  turn       ${t.turn ?? "?"}${t.harness ? ` (${cutLine(t.harness, 40)})` : ""}`,
    `  model      ${c?.model_id ? cutLine(c.model_id, 200) : "not known"}${c ? ` (contributor: ${cutLine(c.type, 20)})` : ""}`,
    `  tool call  ${t.tool ? block(`${oneLine(t.tool.name)}${t.tool.id ? ` ${oneLine(t.tool.id)}` : ""}: ${text(t.tool.input)}`, 8, 500) : "none named: the turn as a whole"}`,
    `  commit     ${t.commit?.slice(0, 12)}${t.at ? `, line ${t.at.line} of ${oneLine(t.at.path)}` : ""}${t.range ? ` (range ${text(t.range.start_line)}-${text(t.range.end_line)})` : ""}`,
  ];
  if (t.prompt)
    out.push(
      `  asked by   ${block(`${t.prompt.kind === "task" ? "the task's prompt" : t.prompt.kind === "review" ? "a review" : "lazy send"}: ${text(t.prompt.text)}`, 12, 500)}`,
    );
  return out;
}

export const trace = command({
  meta: {
    name: "trace",
    description: "Which agent task wrote a line: its task, turn, model and tool call, and what asked for it (from the trace records)",
  },
  args: {
    spot: { type: "positional", description: "FILE:LINE, the file as named from here (the working tree's version)", required: true },
    ...jsonArg,
  },
  async run({ args }) {
    const { file, line } = Provenance.parseSpot(String(args.spot));
    const root = findProjectRoot();
    // [provenance] prompts = false leaves prompts out; a lazy.toml lazy cannot read does too.
    const loaded = load(root);
    const prompts = loaded.ok ? loaded.config.provenance.prompts : false;
    const t = await Provenance.trace(root, process.cwd(), file, line, prompts);
    if (args.json) printJson(t);
    else for (const l of lines(t)) print(l);
  },
});
