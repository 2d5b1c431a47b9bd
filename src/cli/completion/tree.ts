/**
 * The command tree as completion needs it, read from the citty definitions themselves (every
 * subcommand and flag, hidden ones left out), so the scripts stay true as commands are added.
 */
import type { ArgDef, CommandDef } from "citty";

export interface Flag {
  /** `--name`, then `-a` for each alias. */
  names: string[];
  description: string;
  /** A flag whose next word is its value (a string or an enum), not a subcommand. */
  value: boolean;
  /** The values an enum flag accepts. */
  choices: string[];
}

export interface Node {
  /** The words that reach this command: [] for lazy itself, ["task", "add"]. */
  path: string[];
  subs: { name: string; description: string }[];
  flags: Flag[];
  /** Values a positional accepts, when its valueHint lists them (`bash|zsh|fish`). */
  choices: string[];
  /**
   * Which positional (1-based) names a task, 0 for none: there the scripts offer the project's
   * task codes, asked of a running daemon when the TAB is pressed (`lazy __complete tasks`).
   */
  taskAt: number;
  /** The flags whose value names a task (`--task`): their value completes to task codes too. */
  taskFlags: string[];
}

type Resolvable<T> = T | Promise<T> | (() => T | Promise<T>);
const resolve = async <T>(v: Resolvable<T>): Promise<T> => (typeof v === "function" ? await (v as () => T | Promise<T>)() : await v);

/** One line of a description: completion menus show a short phrase, not a paragraph. */
export function short(description: string | undefined): string {
  const first = (description ?? "")
    .split(/\n|\.\s+(?=[A-Z])/)[0]!
    .replace(/\.$/, "")
    .trim();
  return first.length > 70 ? `${first.slice(0, 69).trimEnd()}…` : first;
}

/** The argument that names a task, wherever a command takes one (a positional, or --task). */
const TASK = "task";

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** Every reachable command, depth first, in the order they are defined. */
export async function walk(root: CommandDef<any>): Promise<Node[]> {
  const out: Node[] = [];
  const visit = async (cmd: CommandDef<any>, path: string[]) => {
    const args = (await resolve(cmd.args ?? {})) as Record<string, ArgDef>;
    const flags: Flag[] = [];
    const choices: string[] = [];
    let positionals = 0;
    let taskAt = 0;
    const taskFlags: string[] = [];
    for (const [key, a] of Object.entries(args)) {
      if (a.type === "positional") {
        positionals++;
        if (key === TASK) taskAt = positionals;
        if (a.valueHint?.includes("|")) choices.push(...a.valueHint.split("|"));
        continue;
      }
      const aliases = "alias" in a && a.alias ? [a.alias].flat() : [];
      flags.push({
        names: [`--${kebab(key)}`, ...aliases.map((x) => (x.length === 1 ? `-${x}` : `--${x}`))],
        description: short(a.description),
        value: a.type === "string" || a.type === "enum",
        choices: a.type === "enum" ? (a.options ?? []) : [],
      });
      if (key === TASK && a.type === "string") taskFlags.push(`--${key}`);
    }
    // lazy answers these everywhere (cli/index.ts), before citty sees the words.
    flags.push({ names: ["--help", "-h"], description: "Show help", value: false, choices: [] });
    if (!path.length) flags.push({ names: ["--version", "-v"], description: "Print the version", value: false, choices: [] });

    const node: Node = { path, subs: [], flags, choices, taskAt, taskFlags };
    out.push(node);
    const subs = cmd.subCommands ? ((await resolve(cmd.subCommands)) as Record<string, Resolvable<CommandDef<any>>>) : {};
    for (const [name, entry] of Object.entries(subs)) {
      const sub = await resolve(entry);
      const meta = await resolve(sub.meta ?? {});
      if (meta.hidden) continue;
      node.subs.push({ name, description: short(meta.description) });
      await visit(sub, [...path, name]);
    }
  };
  await visit(root, []);
  return out;
}
