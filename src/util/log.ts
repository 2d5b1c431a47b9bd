/**
 * A tiny tagged logger. Everything goes to stderr (never stdout, so `--json` stays clean);
 * the daemon also appends to its log file. Never pass a secret to it.
 */
import { appendFileSync } from "node:fs";

type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let logFile: string | undefined;
let toStderr = true;
let minLevel: Level = (process.env.LAZY_LOG_LEVEL as Level) in order ? (process.env.LAZY_LOG_LEVEL as Level) : "info";

export type Settings = { file?: string; stderr?: boolean; level?: Level };

/** The daemon sends its log to a file (and not to a terminal it no longer has). */
export function configure(opts: Settings) {
  logFile = opts.file;
  if (opts.stderr !== undefined) toStderr = opts.stderr;
  if (opts.level) minLevel = opts.level;
}

/** The current settings, for a worker thread to log the same way. */
export function settings(): Settings {
  return { file: logFile, stderr: toStderr, level: minLevel };
}

function write(level: Level, tag: string, msg: string) {
  if (order[level] < order[minLevel]) return;
  const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} [${tag}] ${msg}\n`;
  if (logFile) appendFileSync(logFile, line);
  if (toStderr) process.stderr.write(line);
}

export function create(tag: string) {
  return {
    debug: (msg: string) => write("debug", tag, msg),
    info: (msg: string) => write("info", tag, msg),
    warn: (msg: string) => write("warn", tag, msg),
    error: (msg: string) => write("error", tag, msg),
  };
}
export type Logger = ReturnType<typeof create>;
