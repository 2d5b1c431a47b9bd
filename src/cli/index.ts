/**
 * The CLI: parses what you type, asks the daemon, prints the result. Failures print one
 * actionable sentence on stderr and exit non-zero; this is the second of the two places a
 * LazyError becomes words (the daemon's HTTP handler is the first).
 */
import { runCommand, renderUsage, type CommandDef } from "citty";
import { command, setPassthrough, getExitCode, printJson } from "./command";
import { LazyError } from "../util/errors";
import { VERSION } from "../version";
import { say } from "./voice";
import { forStream, stripAnsi } from "./terminal";

export const EXIT = { ok: 0, failed: 1, usage: 2, internal: 70 } as const;

const main: CommandDef<any> = command({
  meta: { name: "lazy", description: "Run coding agents in containers, behind a proxy that keeps your credentials" },
  // Each command loads when used, so a quick command does not pay for the others' imports.
  subCommands: {
    init: () => import("./commands/init").then((m) => m.init),
    daemon: () => import("./commands/daemon").then((m) => m.daemon),
    task: () => import("./commands/task").then((m) => m.task),
    doctor: () => import("./commands/doctor").then((m) => m.doctor),
    dashboard: () => import("./commands/dashboard").then((m) => m.dashboard),
    auth: () => import("./commands/auth").then((m) => m.auth),
    stats: () => import("./commands/stats").then((m) => m.stats),
    egress: () => import("./commands/egress").then((m) => m.egress),
    chat: () => import("./commands/chat").then((m) => m.chat),
    pair: () => import("./commands/chat").then((m) => m.pair),
    supervise: () => import("./commands/supervise").then((m) => m.supervise),
    start: () => import("./commands/turns").then((m) => m.start),
    send: () => import("./commands/turns").then((m) => m.send),
    stop: () => import("./commands/turns").then((m) => m.stop),
    logs: () => import("./commands/turns").then((m) => m.logs),
    watch: () => import("./commands/watch").then((m) => m.watch),
    memory: () => import("./commands/memory").then((m) => m.memory),
    ask: () => import("./commands/ask").then((m) => m.ask),
    report: () => import("./commands/ask").then((m) => m.report),
    build: () => import("./commands/chat").then((m) => m.build),
    accept: () => import("./commands/turns").then((m) => m.accept),
    reject: () => import("./commands/turns").then((m) => m.reject),
    close: () => import("./commands/turns").then((m) => m.close),
    run: () => import("./commands/turns").then((m) => m.run),
    // The completion scripts are generated from this very tree, so they name every command.
    completion: (): Promise<CommandDef<any>> => import("./commands/completion").then((m) => m.completion(main)),
  },
});

type Resolvable<T> = T | Promise<T> | (() => T | Promise<T>);
const resolveValue = async <T>(v: Resolvable<T>): Promise<T> => (typeof v === "function" ? await (v as () => T | Promise<T>)() : await v);

async function findCommand(words: string[]): Promise<{ cmd: CommandDef<any>; parent?: CommandDef<any> }> {
  let cmd: CommandDef<any> = main;
  let parent: CommandDef<any> | undefined;
  for (const w of words) {
    if (w.startsWith("-")) continue;
    const subs = cmd.subCommands ? ((await resolveValue(cmd.subCommands)) as Record<string, Resolvable<CommandDef<any>>>) : undefined;
    const entry = subs?.[w];
    if (!entry) break;
    parent = cmd;
    cmd = await resolveValue(entry);
  }
  return { cmd, parent };
}

export async function run(argv: string[]): Promise<number> {
  const dd = argv.indexOf("--");
  const own = dd === -1 ? argv : argv.slice(0, dd);
  setPassthrough(dd === -1 ? [] : argv.slice(dd + 1));
  try {
    const version = own.filter((w) => w !== "--json");
    if (version.length === 1 && (version[0] === "--version" || version[0] === "-v")) {
      if (own.includes("--json")) printJson({ version: VERSION });
      else process.stdout.write(`${VERSION}\n`);
      return EXIT.ok;
    }
    if (own.includes("--help") || own.includes("-h") || own.length === 0) {
      const { cmd, parent } = await findCommand(own);
      // A command's meta name is its path ("task list"): citty prefixes the parent's, so the
      // parent it is shown is lazy itself ("lazy task list", not "task task list").
      const usage = await renderUsage(cmd, parent ? { meta: { name: "lazy" } } : undefined);
      // citty colours its help unless NO_COLOR is exactly "1": lazy's rule decides instead.
      process.stdout.write(forStream(process.stdout, usage) + "\n");
      return EXIT.ok;
    }
    const { cmd } = await findCommand(own);
    if (cmd.subCommands && !cmd.run) {
      const known = Object.keys(await resolveValue(cmd.subCommands));
      const word = own.find((w) => !w.startsWith("-") && !known.includes(w) && w !== (cmd.meta as { name?: string })?.name);
      throw new LazyError(
        "invalid_input",
        word
          ? `Unknown command "${word}"; try one of: ${known.filter((k) => k !== "run").join(", ")}.`
          : `Say what to do: one of ${known.filter((k) => k !== "run").join(", ")} (lazy --help).`,
      );
    }
    await runCommand(main, { rawArgs: own });
    return getExitCode();
  } catch (e) {
    return report(e);
  }
}

function report(e: unknown): number {
  if (e instanceof LazyError) {
    say.error([e.message, ...e.details.map((d) => `  ${d}`)].join("\n"));
    return e.code === "invalid_input" ? EXIT.usage : EXIT.failed;
  }
  // citty's own complaints (a missing argument, an unknown subcommand) are usage errors.
  const err = e as Error & { code?: string };
  if (err?.name === "CLIError" || err?.code?.startsWith?.("E_")) {
    say.error(`${stripAnsi(err.message).replace(/\.?$/, ".")} See lazy --help.`);
    return EXIT.usage;
  }
  say.error(`unexpected error: ${err?.message ?? String(e)}. Please report it with the output of lazy daemon logs.`);
  say.debug(err?.stack);
  return EXIT.internal;
}
