/**
 * What may reach a person's terminal. lazy colours only a terminal with `NO_COLOR` unset
 * (https://no-color.org), so piped output carries no escape byte; and text that came from
 * elsewhere (a task's title, an agent's message, a log line) never carries control bytes that
 * a terminal would obey: an agent must not be able to move the cursor, retitle the window or
 * hide a line in what lazy prints.
 */

import { stripAnsi } from "../util/ansi";

/** Whether lazy may colour what it writes to this stream. */
export function colours(stream: NodeJS.WriteStream): boolean {
  const env = process.env;
  if ("NO_COLOR" in env && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY) && env.TERM !== "dumb";
}

/** Text without its escape sequences: a library's colours (citty's help) when we may not colour. */
export { stripAnsi };

// C0 controls but tab and newline, DEL, and the C1 controls (U+0080–U+009F: U+009B is a CSI).
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control bytes is the point
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** Control bytes shown, not obeyed: ESC becomes the four characters `\x1b`. */
export const visible = (s: string) => s.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);

/** A library's rendering (citty's help) for this stream: its escapes kept only where lazy may colour. */
export const forStream = (stream: NodeJS.WriteStream, s: string) => (colours(stream) ? s : stripAnsi(s));

/**
 * A line someone else wrote (a build's output: the Dockerfile and the files it reads are the
 * agent's to change), made fit for one line of a terminal: escape sequences gone, every other
 * control byte shown as text, tabs as a space, and at most `max` characters.
 */
export function inert(s: string, max = 300): string {
  const t = visible(stripAnsi(s.length > 4 * max ? s.slice(0, 4 * max) : s).replace(/\t/g, " "));
  if (Bun.stringWidth(t) <= max) return t;
  // Cut by the columns a terminal gives each character (a CJK letter or an emoji takes two): a
  // line wider than counted wraps, and a redraw with \r would leave its first rows on the screen.
  let out = "";
  let width = 0;
  for (const ch of t) {
    const w = Bun.stringWidth(ch);
    if (width + w > max - 1) break;
    out += ch;
    width += w;
  }
  return `${out}…`;
}
