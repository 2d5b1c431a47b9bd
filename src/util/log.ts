/**
 * A tiny tagged logger. Everything goes to stderr (never stdout, so `--json` stays clean);
 * the daemon also appends to its log file. Never pass a secret to it.
 *
 * What a container can cause many times a second (a dropped connection, a refused flood) goes
 * through `repeated`: the first line of a kind is written at once, the rest are counted and
 * summed up in one line a minute, so a flood cannot fill the disk or drown the log.
 */
import { appendFileSync } from "node:fs";

type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

let logFile: string | undefined;
/** Called when a line could not be written for room: true when it made some (disk/reserve.ts frees lazy's reserve). */
let onFull: (() => boolean) | undefined;
let toStderr = true;
let minLevel: Level = (process.env.LAZY_LOG_LEVEL as Level) in order ? (process.env.LAZY_LOG_LEVEL as Level) : "info";

export type Settings = { file?: string; stderr?: boolean; level?: Level; onFull?: () => boolean };

/** The daemon sends its log to a file (and not to a terminal it no longer has). */
export function configure(opts: Settings) {
  logFile = opts.file;
  if (opts.stderr !== undefined) toStderr = opts.stderr;
  if (opts.level) minLevel = opts.level;
  if (opts.onFull) onFull = opts.onFull;
}

/** The current settings, for a worker thread to log the same way. */
export function settings(): Settings {
  return { file: logFile, stderr: toStderr, level: minLevel };
}

function write(level: Level, tag: string, msg: string) {
  if (order[level] < order[minLevel]) return;
  const line = `${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} [${tag}] ${msg}\n`;
  if (logFile) append(logFile, line);
  if (toStderr) process.stderr.write(line);
}

/**
 * A log line never throws into what it reports on. On a full disk the line is written again
 * once room was made (lazy's reserve freed); otherwise it goes to stderr only.
 */
function append(file: string, line: string): void {
  try {
    appendFileSync(file, line);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOSPC" && onFull?.())
      try {
        appendFileSync(file, line);
        return;
      } catch {}
    if (!toStderr) process.stderr.write(line);
  }
}

/** How often a repeated kind of line is summed up. */
export const REPEAT_WINDOW_MS = 60_000;

interface Repeat {
  level: Level;
  tag: string;
  /** The latest line of this kind, shown in the summary. */
  last: string;
  /** Lines of this kind since the window opened, the first (written at once) not counted. */
  more: number;
}
const repeats = new Map<string, Repeat>();
let repeatTimer: ReturnType<typeof setInterval> | undefined;

function repeated(level: Level, tag: string, key: string, msg: string) {
  const r = repeats.get(key);
  if (r) {
    r.more++;
    r.last = msg;
    return;
  }
  repeats.set(key, { level, tag, last: msg, more: 0 });
  write(level, tag, msg);
  if (!repeatTimer) {
    repeatTimer = setInterval(sumUp, REPEAT_WINDOW_MS);
    repeatTimer.unref?.();
  }
}

/** Once a window: one line per kind that came again, then the window starts afresh. */
function sumUp() {
  // On a Worker an exception thrown from a timer stops the thread (AGENTS.md): none escapes.
  try {
    for (const [key, r] of repeats) {
      if (r.more === 0) {
        repeats.delete(key);
        continue;
      }
      write(r.level, r.tag, `${r.more} more in the last ${REPEAT_WINDOW_MS / 1000} s, the latest: ${r.last}`);
      r.more = 0;
    }
    if (!repeats.size) {
      clearInterval(repeatTimer);
      repeatTimer = undefined;
    }
  } catch {}
}

export function create(tag: string) {
  return {
    debug: (msg: string) => write("debug", tag, msg),
    info: (msg: string) => write("info", tag, msg),
    warn: (msg: string) => write("warn", tag, msg),
    error: (msg: string) => write("error", tag, msg),
    /**
     * A line that may come many times a second: the first of its `key` is written at once,
     * later ones within the minute are counted and summed up in one line when it ends.
     */
    repeated: (level: Level, key: string, msg: string) => repeated(level, tag, `${tag}\0${key}`, msg),
  };
}
export type Logger = ReturnType<typeof create>;
