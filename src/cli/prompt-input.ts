/**
 * Where a prompt or message comes from on the command line: the argument itself, `-` for
 * standard input, or `--file F`. Each is read within lazy's bound (util/prompt.ts) plus one
 * byte, so a huge file or stream is refused with the bound, not read whole, and an empty one
 * is refused with its reason; either before the daemon is asked to make anything.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { LazyError } from "../util/errors";
import { checkPrompt, overBound, PROMPT_MAX_BYTES } from "../util/prompt";

/** The flag every command taking a prompt or message has. */
export const fileArg = {
  file: { type: "string", description: "Read it from this file (or - for standard input) instead of the argument" },
} as const;

/** A command's prompt (or message, or question): the positional argument `name`, and --file beside it. */
export const promptArgs = <const N extends string>(name: N, description: string) =>
  ({
    [name]: { type: "positional", description: `${description} (- reads standard input)`, required: false },
    ...fileArg,
  }) as Record<N, { readonly type: "positional"; readonly description: string; readonly required: false }> & typeof fileArg;

/** `what`: prompt, message or question; `text`: the positional argument; `file`: --file. */
export async function promptFrom(what: string, text: string | undefined, file: string | undefined): Promise<string> {
  if (file !== undefined && text !== undefined && text !== "-")
    throw new LazyError("invalid_input", `Give the ${what} as an argument or with --file, not both.`);
  const source = file ?? text;
  if (source === undefined)
    throw new LazyError("invalid_input", `Give the ${what}: as an argument, - to read standard input, or --file F.`);
  if (file === undefined && text !== "-") return checkPrompt(text ?? "", what);
  const got = source === "-" ? await readStdin() : readFile(source, what);
  if (Buffer.byteLength(got, "utf8") > PROMPT_MAX_BYTES)
    throw new LazyError("invalid_input", overBound(what, `more than ${PROMPT_MAX_BYTES} bytes`));
  return checkPrompt(got, what);
}

/** At most the bound plus one byte: enough to say it is over. */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new LazyError("invalid_input", "- reads the prompt from standard input: pipe it in (… | lazy …).");
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of Bun.stdin.stream()) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > PROMPT_MAX_BYTES) break;
  }
  return Buffer.concat(chunks)
    .subarray(0, PROMPT_MAX_BYTES + 1)
    .toString("utf8");
}

function readFile(path: string, what: string): string {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading waits for a writer, forever if none comes; this way
    // it opens at once, and fstat below refuses it (and any device) before a byte is read.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new LazyError(
      "invalid_input",
      `Cannot read the ${what} from ${path}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}.`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new LazyError("invalid_input", `${path} is not a file; --file - reads standard input.`);
    if (st.size > PROMPT_MAX_BYTES) throw new LazyError("invalid_input", overBound(what, `${st.size} bytes (${path})`));
    const buf = Buffer.alloc(PROMPT_MAX_BYTES + 1);
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, null);
      if (n <= 0) break;
      got += n;
    }
    return buf.subarray(0, got).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
