/**
 * How the records' writing runs git: src/git's gitBounded (without blocking the daemon's thread,
 * bounded in bytes and time), its output as text and a failure as git's own last line.
 */
import { gitBounded } from "../git";

/** The longest one git run of the records' writing may take (the turn's own budget may give it less). */
export const GIT_MS = 60_000;

export interface Ran {
  /** It exited 0. */
  ok: boolean;
  /** What it printed (its first `maxBytes`). */
  out: string;
  /** It printed more than `maxBytes`: killed, `out` is what came first. */
  cut: boolean;
  /** Why it failed: git's last line, or the bound it ran past. */
  why: string;
}

export async function run(
  root: string,
  args: string[],
  maxBytes: number,
  opts: { timeoutMs?: number; stdin?: string | Uint8Array } = {},
): Promise<Ran> {
  const r = await gitBounded(root, args, {
    maxBytes: Math.max(1, maxBytes),
    timeoutMs: Math.max(1, opts.timeoutMs ?? GIT_MS),
    stdin: opts.stdin,
  });
  const why = r.late
    ? `git ${args[0]} ran past ${Math.round(opts.timeoutMs ?? GIT_MS)} ms`
    : (r.err.trim().split("\n").at(-1) ?? `git ${args[0]} exited ${r.code}`) || `git ${args[0]} exited ${r.code}`;
  return { ok: r.code === 0, out: r.out.toString("utf8"), cut: r.cut, why };
}
