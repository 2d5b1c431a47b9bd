/**
 * The desktop channel: a notification through notify-send (Linux) or osascript (macOS),
 * whichever is on PATH. The title and body come partly from the agent, so they go to the tool
 * as argv entries, never through a shell or into script text: osascript reads them as its run
 * handler's arguments, notify-send gets them after `--` with its markup escaped.
 */
import type { Logger } from "../util/log";

export type DesktopTool = { name: "notify-send" | "osascript"; path: string };

/** Longest body shown; a desktop notification is a glance, the webhook carries the rest. */
const BODY_MAX = 300;
/** A notifier that hangs (no session bus, say) is killed after this. */
const KILL_AFTER_MS = 10_000;

/** The tool lazy would use, from PATH: osascript first on macOS, notify-send first elsewhere. */
export function desktopTool(which: (cmd: string) => string | null = (c) => Bun.which(c)): DesktopTool | undefined {
  const order = process.platform === "darwin" ? (["osascript", "notify-send"] as const) : (["notify-send", "osascript"] as const);
  for (const name of order) {
    const path = which(name);
    if (path) return { name, path };
  }
  return undefined;
}

/** notify-send bodies may be rendered as markup: show the agent's text as text. */
const escapeMarkup = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

export function argv(tool: DesktopTool, title: string, body: string): string[] {
  const b = body.length > BODY_MAX ? `${body.slice(0, BODY_MAX - 1)}…` : body;
  if (tool.name === "notify-send") return [tool.path, "--app-name=lazy", "--", title, escapeMarkup(b)];
  return [tool.path, ...OSASCRIPT.flatMap((line) => ["-e", line]), title, b];
}

/** osascript's script, a line an -e: the text is the run handler's argument, never script text. */
const OSASCRIPT = ["on run argv", "display notification (item 2 of argv) with title (item 1 of argv)", "end run"];

/** Show one notification; returns at once, and a failure is a log line. */
export function show(tool: DesktopTool, title: string, body: string, log: Logger): void {
  let proc: ReturnType<typeof Bun.spawn>;
  try {
    proc = Bun.spawn(argv(tool, title, body), { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  } catch (e) {
    log.warn(`desktop notification: could not run ${tool.path}: ${(e as Error).message}`);
    return;
  }
  const timer = setTimeout(() => proc.kill(), KILL_AFTER_MS);
  void (async () => {
    const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr as ReadableStream).text()]);
    clearTimeout(timer);
    if (code !== 0)
      log.warn(
        `desktop notification: ${tool.name} exited ${code}${err.trim() ? `: ${(err.trim().split("\n")[0] ?? "").slice(0, 200)}` : ""}`,
      );
  })().catch((e) => log.warn(`desktop notification: ${(e as Error).message}`));
}
