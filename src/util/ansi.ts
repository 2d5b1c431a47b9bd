/**
 * Terminal escape sequences in text that came from elsewhere (a build's output, a library's
 * colours): CSI (ESC [ … final), OSC (ESC ] … BEL or ST: titles, hyperlinks, OSC 52 clipboard
 * writes), then any other ESC pair. How the rest of the control bytes show is cli/terminal.ts's say.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]/g;

/** Text without its escape sequences (an unterminated one keeps its ESC, for the caller to show). */
export const stripAnsi = (s: string) => s.replace(ANSI, "");
