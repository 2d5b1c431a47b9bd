/**
 * How big a prompt or a message may be, said once for the API and the CLI. A turn's prompt
 * reaches the harness as one argument of `docker exec` (`claude -p PROMPT`, codex and pi alike),
 * and Linux refuses any single argument over 128 KiB (MAX_ARG_STRLEN): the turn would never
 * start. 100 KiB leaves room for the project memory block a first turn carries (8,000
 * characters and its header). Both checks run before a task is made.
 */
import { z } from "zod";
import { LazyError } from "./errors";

export const PROMPT_MAX_BYTES = 100 * 1024;

/** Why this text cannot be a prompt (`what`: "prompt", "message", "question"), or null. */
export function promptProblem(text: string, what: string): string | null {
  if (text.trim() === "")
    return `The ${what} is empty: ${what === "question" ? "say what you want to know" : "say what the agent should do"}.`;
  const bytes = Buffer.byteLength(text, "utf8");
  return bytes > PROMPT_MAX_BYTES ? overBound(what, `${bytes} bytes`) : null;
}

/** The refusal of a prompt over the bound; `size` as known ("1048576 bytes", "more than …"). */
export const overBound = (what: string, size: string) =>
  `The ${what} is ${size}, over lazy's bound of ${PROMPT_MAX_BYTES} bytes (100 KiB: a harness gets it as one argument, and Linux refuses one over 128 KiB). Put the long part in a file in the project and point the agent at it.`;

export function checkPrompt(text: string, what: string): string {
  const problem = promptProblem(text, what);
  if (problem) throw new LazyError("invalid_input", problem);
  return text;
}

/** The schema of a prompt or message in an API body: refused with the bound, before anything is made. */
export const promptSchema = (what: string) =>
  z.string().superRefine((s, ctx) => {
    const problem = promptProblem(s, what);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** Linux's bound on one argument of a new process (MAX_ARG_STRLEN, 32 pages), its NUL included. */
export const ARG_MAX_BYTES = 128 * 1024;

/**
 * Why this command cannot be started, or null: an argument Linux would refuse. The runner asks
 * before a turn starts, so a prompt that reached the store some other way (an older lazy, the
 * project memory on top) fails its launch with this cause instead of an exec that never runs.
 */
export function argvProblem(argv: string[]): string | null {
  for (const a of argv) {
    const bytes = Buffer.byteLength(a, "utf8") + 1;
    if (bytes > ARG_MAX_BYTES)
      return `The turn's prompt (with what lazy adds to it) is ${bytes - 1} bytes: the harness gets it as one argument, and Linux refuses one over ${ARG_MAX_BYTES - 1} bytes. Send a shorter message (at most ${PROMPT_MAX_BYTES} bytes), with the long part in a file in the project.`;
  }
  return null;
}
