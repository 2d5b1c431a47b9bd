/**
 * `lazy trace FILE:LINE`: which agent task wrote a line — its task, turn, model and tool call,
 * and the prompt or review comment that asked for the turn — from the commit's trace record
 * (src/provenance: git blame on the working tree's file, then the note under
 * refs/notes/agent-trace). Runs on the host alone: no daemon needed, and it works in any clone
 * that fetched the notes. A line no agent task wrote says so ("not written by an agent task").
 * Exit code 0 for both answers (--json says which: `agent`); 2 for a user error (no such file, a
 * line past its end), 1 when the record cannot be read. What a record holds is the agent's text
 * in part: shown through print (control bytes made visible), never obeyed by the terminal.
 */
import { load } from "../../config";
import * as Provenance from "../../provenance";
import { findProjectRoot } from "../../util/paths";
import { command, jsonArg, print, printJson } from "../command";

const BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/g;
/** A file name on one line: a break in it (the agent names files) is shown as \n, never a line of lazy's. */
const oneLine = (s: string) =>
  s.replace(BREAK, (c) =>
    c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\r\n" ? "\\r\\n" : `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );

/** The human reading of a traced line. */
function lines(t: Provenance.Traced): string[] {
  const spot = `${oneLine(t.file)}:${t.line}`;
  if (!t.agent)
    return [
      t.commit
        ? `${spot} was not written by an agent task: commit ${t.commit.slice(0, 12)} by ${t.author?.name || "someone"}${t.author?.date ? `, ${t.author.date.slice(0, 10)}` : ""} has no trace record.`
        : `${spot} was not written by an agent task: it is not committed yet.`,
    ];
  // Every line after a field's first is indented under it, so none can start where lazy's own do.
  const indent = (s: string) => s.replace(BREAK, `\n${" ".repeat(13)}`);
  const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);
  const task = t.task ? `${t.task.code ?? t.task.id}${t.task.code ? ` (${t.task.id})` : ""}: ${t.task.title}` : "(not named in the record)";
  const out = [
    `${spot} was written by an agent task:`,
    `  task       ${indent(cut(task, 300))}`,
    `  turn       ${t.turn ?? "?"}${t.harness ? ` (${t.harness})` : ""}`,
    `  model      ${t.contributor?.model_id ?? "not known"}${t.contributor ? ` (contributor: ${t.contributor.type})` : ""}`,
    `  tool call  ${t.tool ? indent(`${t.tool.name}${t.tool.id ? ` ${t.tool.id}` : ""}: ${cut(t.tool.input, 600)}`) : "none named: the turn as a whole"}`,
    `  commit     ${t.commit?.slice(0, 12)}${t.at ? `, line ${t.at.line} of ${oneLine(t.at.path)}` : ""}${t.range ? ` (range ${t.range.start_line}-${t.range.end_line})` : ""}`,
  ];
  if (t.prompt)
    out.push(
      `  asked by   ${indent(`${t.prompt.kind === "task" ? "the task's prompt" : t.prompt.kind === "review" ? "a review" : "lazy send"}: ${cut(t.prompt.text, 1000)}`)}`,
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
  run({ args }) {
    const { file, line } = Provenance.parseSpot(String(args.spot));
    const root = findProjectRoot();
    // [provenance] prompts = false leaves prompts out; a lazy.toml lazy cannot read does too.
    const loaded = load(root);
    const prompts = loaded.ok ? loaded.config.provenance.prompts : false;
    const t = Provenance.trace(root, process.cwd(), file, line, prompts);
    if (args.json) printJson(t);
    else for (const l of lines(t)) print(l);
  },
});
