/**
 * The CLI: parses what you type, asks the daemon, prints the result. Failures print one
 * actionable sentence on stderr and exit non-zero; this is the second of the two places a
 * LazyError becomes words (the daemon's HTTP handler is the first).
 */
import { type CommandDef, runCommand } from "citty";
import { LazyError, speak } from "../util/errors";
import { BUILT, COMMIT, VERSION, versionLine } from "../version";
import { command, getExitCode, printJson, setPassthrough } from "./command";
import { helpText, suggest } from "./help";
import { out } from "./out";
import { forStream, stripAnsi } from "./terminal";
import { say } from "./voice";
import { cli as cliVoice } from "./words";

/** `untrusted`: lazy.toml is not trusted (lazy trust), the same code as lazy run's "launch refused". */
/** 4: refused before anything was done (an untrusted lazy.toml, a launch the preflight refused). */
export const EXIT = { ok: 0, failed: 1, usage: 2, untrusted: 4, refused: 4, internal: 70 } as const;

const main: CommandDef<any> = command({
  meta: { name: "lazy", description: "Run coding agents in containers, behind a proxy that keeps your credentials" },
  // Each command loads when used, so a quick command does not pay for the others' imports.
  subCommands: {
    init: () => import("./commands/init").then((m) => m.init),
    trust: () => import("./commands/trust").then((m) => m.trust),
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
    diff: () => import("./commands/diff").then((m) => m.diff),
    accept: () => import("./commands/turns").then((m) => m.accept),
    reject: () => import("./commands/reject").then((m) => m.reject),
    compare: () => import("./commands/compare").then((m) => m.compare),
    close: () => import("./commands/turns").then((m) => m.close),
    run: () => import("./commands/turns").then((m) => m.run),
    prune: () => import("./commands/prune").then((m) => m.prune),
    export: () => import("./commands/export").then((m) => m.exportBundle),
    trace: () => import("./commands/trace").then((m) => m.trace),
    // Both answered in run() below, before citty; defined here so help and completion list them.
    help: command({
      meta: { name: "help", description: "Help on lazy or on one command: lazy help task add" },
      args: { command: { type: "positional", description: "The command", required: false } },
    }),
    version: command({
      meta: { name: "version", description: "Print lazy's version, the commit it was built from and when (--json for JSON)" },
      args: {},
    }),
    // The completion scripts are generated from this very tree, so they name every command.
    completion: (): Promise<CommandDef<any>> => import("./commands/completion").then((m) => m.completion(main)),
    // Hidden: the completion scripts ask it for task codes.
    __complete: () => import("./commands/complete").then((m) => m.complete),
  },
});

type Resolvable<T> = T | Promise<T> | (() => T | Promise<T>);
const resolveValue = async <T>(v: Resolvable<T>): Promise<T> => (typeof v === "function" ? await (v as () => T | Promise<T>)() : await v);

/**
 * The command the words name, its parent and path; `unknown` when a word where a subcommand was
 * expected names none (the first word that is not a flag; later words are a command's arguments).
 */
async function findCommand(words: string[]): Promise<{
  cmd: CommandDef<any>;
  parent?: CommandDef<any>;
  path: string[];
  unknown?: { word: string; under: CommandDef<any> };
}> {
  let cmd: CommandDef<any> = main;
  let parent: CommandDef<any> | undefined;
  const path: string[] = [];
  for (const w of words) {
    if (w.startsWith("-")) continue;
    if (!cmd.subCommands) break;
    const subs = (await resolveValue(cmd.subCommands)) as Record<string, Resolvable<CommandDef<any>>>;
    const entry = subs[w];
    if (!entry) return { cmd, parent, path, ...(cmd.run ? {} : { unknown: { word: w, under: cmd } }) };
    parent = cmd;
    path.push(w);
    cmd = await resolveValue(entry);
  }
  return { cmd, parent, path };
}

/** The subcommands of `cmd` a person may be shown (hidden ones, internal to lazy, left out). */
async function visibleSubs(cmd: CommandDef<any>): Promise<string[]> {
  const subs = (await resolveValue(cmd.subCommands ?? {})) as Record<string, Resolvable<CommandDef<any>>>;
  const out: string[] = [];
  for (const [name, entry] of Object.entries(subs)) {
    const meta = (await resolveValue((await resolveValue(entry)).meta ?? {})) as { hidden?: boolean };
    if (!meta.hidden) out.push(name);
  }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  // Refusals made as data read in the CLI's voice here (`lazy daemon run` installs the API's).
  speak(cliVoice);
  const dd = argv.indexOf("--");
  let own = dd === -1 ? argv : argv.slice(0, dd);
  setPassthrough(dd === -1 ? [] : argv.slice(dd + 1));
  try {
    // `lazy help [cmd]` is `lazy [cmd] --help`; `lazy version` is `lazy --version`.
    if (own[0] === "help") own = [...own.slice(1), "--help"];
    const version = own.filter((w) => w !== "--json");
    if (version.length === 1 && (version[0] === "--version" || version[0] === "-v" || version[0] === "version")) {
      if (own.includes("--json")) printJson({ version: VERSION, commit: COMMIT, date: BUILT });
      else out(`${versionLine()}\n`);
      return EXIT.ok;
    }
    if (own.includes("--help") || own.includes("-h") || own.length === 0) {
      const { cmd, parent, path, unknown } = await findCommand(own);
      if (unknown) await refuseUnknown(unknown.word, unknown.under, path);
      // citty colours its help unless NO_COLOR is exactly "1": lazy's rule decides instead.
      out(forStream(process.stdout, await helpText(cmd, parent, path)) + "\n");
      return EXIT.ok;
    }
    const { cmd, path, unknown } = await findCommand(own);
    if (cmd.subCommands && !cmd.run) {
      if (unknown) await refuseUnknown(unknown.word, unknown.under, path);
      // A group takes no flags of its own (--help and --version were answered above): name the
      // one given rather than asking what to do.
      const flag = own.find((w) => w.startsWith("-") && w !== "-" && !GROUP_FLAGS.has(w.split("=")[0]!));
      if (flag) refuseFlag(flag, path);
      const known = await visibleSubs(cmd);
      throw new LazyError("invalid_input", `Say what to do: one of ${known.join(", ")} (lazy ${[...path, "--help"].join(" ")}).`);
    }
    await runCommand(main, { rawArgs: own });
    return getExitCode();
  } catch (e) {
    return report(e);
  }
}

/** An unknown command, with the closest known ones ("did you mean") or the list. */
async function refuseUnknown(word: string, under: CommandDef<any>, path: string[]): Promise<never> {
  const known = await visibleSubs(under);
  const close = suggest(word, known);
  const at = ["lazy", ...path].join(" ");
  throw new LazyError(
    "invalid_input",
    close.length
      ? `Unknown command "${word}" for ${at}. Did you mean ${close.map((c) => `${at} ${c}`).join(" or ")}?`
      : `Unknown command "${word}" for ${at}; try one of: ${known.join(", ")} (${at} --help).`,
  );
}

/** What lazy itself and its command groups understand before a command (answered in run()). */
const GROUP_FLAGS = new Set(["--help", "-h", "--version", "-v", "--json"]);

/** A flag where a command group takes none: named, with the nearest of the group's own. */
function refuseFlag(flag: string, path: string[]): never {
  const name = flag.split("=")[0]!;
  const at = ["lazy", ...path].join(" ");
  const close = suggest(name.replace(/^-+/, ""), path.length ? ["help"] : ["help", "version"]);
  throw new LazyError(
    "invalid_input",
    `Unknown option ${name} for ${at}.${close.length ? ` Did you mean --${close[0]}?` : ""} See ${at} --help.`,
  );
}

function report(e: unknown): number {
  if (e instanceof LazyError) {
    say.error([e.message, ...e.details.map((d) => `  ${d}`)].join("\n"));
    return e.code === "invalid_input"
      ? EXIT.usage
      : e.code === "config_untrusted" || e.code === "preflight_refused"
        ? EXIT.refused
        : EXIT.failed;
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
