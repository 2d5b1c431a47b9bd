/**
 * The CLI's voice for people: consola, with one reporter that keeps lazy's own words.
 *
 * Messages for a person (errors, warnings, progress, confirmations) go through `say`; the
 * data a command prints (tables, JSON, a task's result, log lines) goes through `print` and
 * `printJson` in command.ts, unadorned, so it pipes. Errors and warnings go to stderr as
 * `lazy: …`, and so do progress (`start`) and running commentary (`info`), which a script
 * reading stdout does not want; confirmations of what a command did (`success`) go to stdout.
 * Colour only when the stream is a terminal and `NO_COLOR` is unset (terminal.ts); `LAZY_DEBUG`
 * opens the debug level.
 */

import { formatWithOptions } from "node:util";
import { type ConsolaReporter, createConsola, type LogObject } from "consola/core";
import { err, out } from "./out";
import { colours, visible } from "./terminal";

const ANSI = { red: 31, yellow: 33, green: 32, cyan: 36, dim: 2 } as const;

const paint = (stream: NodeJS.WriteStream, c: keyof typeof ANSI, s: string) => (colours(stream) ? `\x1b[${ANSI[c]}m${s}\x1b[0m` : s);

/** What each consola type looks like: its stream, the prefix, and the prefix's colour. */
function shape(type: LogObject["type"]): { err: boolean; prefix: string; colour?: keyof typeof ANSI } {
  switch (type) {
    case "fatal":
    case "error":
      return { err: true, prefix: "lazy: ", colour: "red" };
    case "warn":
      return { err: true, prefix: "lazy: ", colour: "yellow" };
    case "debug":
    case "trace":
    case "verbose":
      return { err: true, prefix: "lazy: debug: ", colour: "dim" };
    case "start":
    case "info":
      return { err: true, prefix: "", colour: type === "start" ? "cyan" : undefined };
    case "success":
    case "ready":
      return { err: false, prefix: "", colour: "green" };
    default:
      return { err: false, prefix: "" };
  }
}

const reporter: ConsolaReporter = {
  log(o) {
    const s = shape(o.type);
    const stream = s.err ? process.stderr : process.stdout;
    // A message may quote what an agent wrote: its control bytes are shown, never obeyed.
    const text = visible(formatWithOptions({ colors: false }, ...o.args));
    const [first = "", ...rest] = text.split("\n");
    const head = s.colour && s.prefix ? paint(stream, s.colour, s.prefix.trimEnd()) + " " : s.prefix;
    const body = s.colour && !s.prefix ? paint(stream, s.colour, first) : first;
    (s.err ? err : out)([head + body, ...rest].join("\n") + "\n");
  },
};

export const say = createConsola({ level: process.env.LAZY_DEBUG ? 4 : 3, reporters: [reporter] });
