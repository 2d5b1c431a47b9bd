/**
 * Trailers on a commit message lazy writes (accept's merge: `Lazy-Task`, `Lazy-Model`, …). git
 * reads a message's trailers from its LAST paragraph only (git interpret-trailers, `%(trailers)`),
 * so lazy's go in a paragraph of their own at the very end: whatever the body above holds (a
 * summary a model wrote from the agent's commit subjects, the subjects themselves) stays body,
 * even a line that reads `Lazy-Task: …`. Each key and value is checked here: one line of printable
 * ASCII, so nothing that flows into a value (a model name an answer named) can start another
 * trailer or line.
 */
import { LazyError } from "../util/errors";

export type Trailer = readonly [key: string, value: string];

const KEY = /^[A-Za-z][A-Za-z0-9-]{0,63}$/;
/** One line of printable ASCII, no leading or trailing space, bounded. */
const VALUE = /^[\x21-\x7e](?:[\x20-\x7e]{0,254}[\x21-\x7e])?$/;

/** Whether `value` may be a trailer's value as it is (one line of printable ASCII, at most 256 characters). */
export const trailerValue = (value: string): boolean => VALUE.test(value);

/** `message` with `trailers` as its last paragraph (the message as it is when there are none). */
export function withTrailers(message: string, trailers: readonly Trailer[]): string {
  if (!trailers.length) return message;
  for (const [k, v] of trailers)
    if (!KEY.test(k) || !VALUE.test(v))
      throw new LazyError("internal", `A trailer lazy was to write is not one line of text: ${JSON.stringify(k)}.`);
  return `${message.trimEnd()}\n\n${trailers.map(([k, v]) => `${k}: ${v}`).join("\n")}\n`;
}
