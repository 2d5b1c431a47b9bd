/**
 * A tool call as a person reads it: its input as the command or the named fields it carries
 * (not the harness's JSON), and its output kept within a bound with the cut said. Both are the
 * agent's (or what its commands printed): hostile text, kept as text; the CLI and the dashboard
 * escape it where they show it (cli/terminal.ts visible(), the dashboard's text nodes).
 */

/** The longest input kept, in characters. */
export const INPUT_MAX = 2_000;
/** What of an output is kept: its first OUTPUT_HEAD and last OUTPUT_TAIL characters (a test run's verdict is at its end). */
export const OUTPUT_HEAD = 6_000;
export const OUTPUT_TAIL = 2_000;

const cutNote = (bytes: number) => `… (cut: ${bytes.toLocaleString("en-US")} more bytes)`;

/** A tool's input: a command as it is, other fields one `name: value` a line. */
export function toolInput(input: unknown): string {
  return boundInput(readable(input));
}

function readable(input: unknown): string {
  if (typeof input === "string") return input;
  if (Array.isArray(input)) return input.every((v) => typeof v === "string") ? input.join(" ") : compact(input);
  if (!input || typeof input !== "object") return input === undefined || input === null ? "" : String(input);
  const o = input as Record<string, unknown>;
  const cmd = o.command ?? o.cmd;
  if (typeof cmd === "string") return cmd;
  if (Array.isArray(cmd) && cmd.every((v) => typeof v === "string")) return cmd.join(" ");
  return Object.entries(o)
    .map(([k, v]) => `${k}: ${typeof v === "string" ? v : compact(v)}`)
    .join("\n");
}

const compact = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? "";
  } catch {
    return String(v);
  }
};

function boundInput(s: string): string {
  if (s.length <= INPUT_MAX) return s;
  return `${s.slice(0, INPUT_MAX)}\n${cutNote(Buffer.byteLength(s.slice(INPUT_MAX), "utf8"))}`;
}

/** An output within its bound: `text` as kept (the cut said inside it), `cut` the bytes left out. */
export function toolOutput(raw: string): { text: string; cut?: number } {
  if (raw.length <= OUTPUT_HEAD + OUTPUT_TAIL) return { text: raw };
  const head = raw.slice(0, OUTPUT_HEAD);
  const tail = raw.slice(-OUTPUT_TAIL);
  const cut = Buffer.byteLength(raw.slice(OUTPUT_HEAD, raw.length - OUTPUT_TAIL), "utf8");
  return { text: `${head}\n${cutNote(cut).replace("more ", "")} …\n${tail}`, cut };
}

/** The text of a tool result's content: a string, or blocks of text (an image is named, not kept). */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? "" : compact(content);
  return content
    .map((c) => {
      if (typeof c === "string") return c;
      if (c && typeof c === "object") {
        const b = c as Record<string, unknown>;
        if (b.type === "text" && typeof b.text === "string") return b.text;
        if (b.type === "image") return "[image]";
      }
      return compact(c);
    })
    .join("\n");
}
