/**
 * The six lookup tables every completion script reads, keyed by the command's words: its
 * subcommands, its flags, the flags that take a value, the values it or a flag accepts, which
 * positional names a task, the flags that name one. Written once here; each shell says how a
 * table, a word with its description and a bare word are spelled in it.
 */
import type { Node } from "./tree";

/** How one shell spells the tables. */
export interface Dialect {
  /** The tables' function names start with it: `_lazy` (bash, zsh) or `__lazy` (fish). */
  prefix: string;
  /** A function answering the words of the row whose key is its first argument. */
  table(name: string, rows: [key: string, words: string[]][]): string;
  /** A subcommand or flag as offered, with its description where the shell shows one. */
  described(name: string, description: string): string;
  /** A value, a valued flag or a task flag as the table holds it. */
  word(s: string): string;
}

export function tables(nodes: Node[], d: Dialect): string {
  const key = (n: Node) => n.path.join(" ");
  const rows = (f: (n: Node) => string[]): [string, string[]][] => nodes.map((n) => [key(n), f(n)]);
  const choiceRows: [string, string[]][] = nodes.flatMap((n) => [
    [key(n), n.choices.map(d.word)] as [string, string[]],
    ...n.flags
      .filter((f) => f.choices.length)
      .flatMap((f) => f.names.map((x) => [[...n.path, x].join(" "), f.choices.map(d.word)] as [string, string[]])),
  ]);
  return [
    d.table(
      `${d.prefix}_subs`,
      rows((n) => n.subs.map((s) => d.described(s.name, s.description))),
    ),
    d.table(
      `${d.prefix}_flags`,
      rows((n) => n.flags.flatMap((f) => f.names.map((x) => d.described(x, f.description)))),
    ),
    d.table(
      `${d.prefix}_valued`,
      rows((n) => n.flags.filter((f) => f.value).flatMap((f) => f.names.map(d.word))),
    ),
    d.table(`${d.prefix}_choices`, choiceRows),
    d.table(
      `${d.prefix}_taskat`,
      rows((n) => (n.taskAt ? [String(n.taskAt)] : [])),
    ),
    d.table(
      `${d.prefix}_taskflags`,
      rows((n) => n.taskFlags.map(d.word)),
    ),
  ].join("\n\n");
}
