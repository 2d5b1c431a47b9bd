/**
 * citty with two fixes (docs/wire.md, "Runtime traps"): argv is split at `--` before citty sees it (citty would
 * take a `--help` meant for a harness as its own), and unknown flags are errors, not
 * silently ignored.
 */
import { type ArgsDef, type CommandContext, type CommandDef, defineCommand } from "citty";
import { LazyError } from "../util/errors";
import { suggest } from "./help";
import { out } from "./out";
import { visible } from "./terminal";

export interface Ctx<T extends ArgsDef> extends CommandContext<T> {
  /** Everything after `--`, untouched: passed through to a harness. */
  passthrough: string[];
}

let passthrough: string[] = [];
let exitCode = 0;
/** A command whose outcome is another program's (lazy chat) passes its exit code on. */
export const setExitCode = (code: number) => {
  exitCode = code;
};
export const getExitCode = () => exitCode;
export const setPassthrough = (p: string[]) => {
  passthrough = p;
};

export function command<const T extends ArgsDef>(def: {
  meta: { name: string; description: string; hidden?: boolean };
  args?: T;
  subCommands?: Record<string, CommandDef<any> | (() => Promise<CommandDef<any>>)>;
  run?: (ctx: Ctx<T>) => unknown | Promise<unknown>;
  /**
   * The command's own answer to a refusal (a bad flag included): it says it and returns the exit
   * code (lazy run's --json document); without it the CLI's error printer does (index.ts).
   */
  refuse?: (e: LazyError, args: Ctx<T>["args"]) => number;
}): CommandDef<T> {
  const run = def.run;
  const refuse = def.refuse;
  return defineCommand<T>({
    meta: def.meta,
    args: def.args,
    subCommands: def.subCommands,
    run: run
      ? async (ctx) => {
          try {
            rejectUnknown(def.meta.name, def.args ?? ({} as T), ctx.rawArgs);
            return await run({ ...ctx, passthrough });
          } catch (e) {
            if (!refuse || !(e instanceof LazyError)) throw e;
            setExitCode(refuse(e, ctx.args));
          }
        }
      : undefined,
  });
}

function rejectUnknown(name: string, args: ArgsDef, raw: string[]): void {
  const known = new Set<string>();
  for (const [k, a] of Object.entries(args)) {
    if (a.type === "positional") continue;
    known.add(k);
    known.add(k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`));
    for (const al of [(a as { alias?: string | string[] }).alias ?? []].flat()) known.add(al);
  }
  for (const tok of raw) {
    if (!tok.startsWith("-") || tok === "-") continue;
    const flag = tok.replace(/^-+/, "").split("=")[0]!;
    const bare = flag.startsWith("no-") ? flag.slice(3) : flag;
    if (!known.has(flag) && !known.has(bare)) {
      // Only long names are suggested: a one-letter alias is too short to guess from.
      const close = suggest(
        flag,
        [...known].filter((k) => k.length > 1 && !/[A-Z]/.test(k)),
      );
      throw new LazyError(
        "invalid_input",
        `Unknown option ${tok.split("=")[0]} for lazy ${name}${close.length ? `. Did you mean --${close[0]}?` : "; see lazy " + name + " --help."}`,
      );
    }
  }
}

/** Machine-clean output: only the JSON document on stdout (JSON escapes control bytes itself). */
/** The --json flag of a command whose answer is data. */
export const jsonArg = { json: { type: "boolean", description: "Print JSON on stdout" } } as const;

export const printJson = (v: unknown) => out(JSON.stringify(v, null, 2) + "\n");
/** A stream's record (lazy logs -f --json): one compact JSON object a line. */
export const printJsonLine = (v: unknown) => out(JSON.stringify(v) + "\n");
/** Data for people: lazy adds no escapes, and control bytes in it (an agent's text) are shown, not obeyed. */
export const print = (s = "") => out(visible(s) + "\n");

export function table(rows: string[][]): string {
  if (!rows.length) return "";
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")).join("\n");
}

export function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}
