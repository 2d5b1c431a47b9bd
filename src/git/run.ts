/**
 * How lazy runs git on the host: always hardened against what an agent could have left in a
 * repository (hooks, fsmonitor, replace refs, prompts), synchronously (`git`) or without
 * blocking the daemon's thread (`gitRead`).
 */
import { LazyError } from "../util/errors";

/**
 * Every git lazy runs on the host runs in the project root (never in an agent-written tree),
 * and with the agent's influence removed: no hooks (the user's own included: a merge of the
 * agent's commits runs no code), no fsmonitor, no replace refs, no prompts. safe.directory:
 * as root, lazy works in the user's repository.
 */
export const HARDENED = [
  "-c",
  "safe.directory=*",
  "-c",
  "core.hooksPath=/dev/null",
  "-c",
  "core.fsmonitor=false",
  "-c",
  "core.untrackedCache=false",
];
export const gitEnv = () => ({
  ...process.env,
  GIT_TERMINAL_PROMPT: "0",
  GIT_NO_REPLACE_OBJECTS: "1",
  GIT_ASKPASS: "",
  SSH_ASKPASS: "",
  LC_ALL: "C",
});

export function git(
  cwd: string,
  args: string[],
  opts: { allowFail?: boolean; maxBytes?: number } = {},
): { code: number; out: string; err: string; cut?: boolean } {
  const r = Bun.spawnSync(["git", ...HARDENED, ...args], {
    cwd,
    stdout: "pipe",
    stderr: "pipe",
    env: gitEnv(),
    ...(opts.maxBytes ? { maxBuffer: opts.maxBytes } : {}),
  });
  // Output past maxBytes ends git (the dashboard's diff): what came so far, marked cut.
  if (r.exitedDueToMaxBuffer) return { code: 0, out: r.stdout.toString(), err: "", cut: true };
  const res = { code: r.exitCode ?? 1, out: r.stdout.toString(), err: r.stderr.toString() };
  if (res.code !== 0 && !opts.allowFail)
    throw new LazyError("launch_refused", `git ${args[0]} failed in ${cwd}: ${res.err.trim().split("\n").at(-1) ?? `exit ${res.code}`}`);
  return res;
}

/**
 * git(), without blocking the daemon's thread while it runs: launches at once (best-of-N) make
 * their worktrees side by side, and the network and Docker steps of a launch go on meanwhile.
 */
export async function gitAsync(
  cwd: string,
  args: string[],
  opts: { allowFail?: boolean } = {},
): Promise<{ code: number; out: string; err: string }> {
  const p = Bun.spawn(["git", ...HARDENED, ...args], { cwd, stdin: "ignore", stdout: "pipe", stderr: "pipe", env: gitEnv() });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0 && !opts.allowFail)
    throw new LazyError("launch_refused", `git ${args[0]} failed in ${cwd}: ${err.trim().split("\n").at(-1) ?? `exit ${code}`}`);
  return { code, out, err };
}

/** The same git's output, read without blocking the daemon's thread and never past `maxBytes` (over: it printed more; killed). Null when it failed. */
async function readOut(cwd: string, args: string[], maxBytes: number): Promise<{ bytes: Buffer; over: boolean } | null> {
  const p = Bun.spawn(["git", ...HARDENED, ...args], { cwd, stdout: "pipe", stderr: "ignore", env: gitEnv() });
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of p.stdout) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > maxBytes) {
      p.kill(); // enough: the rest is not read
      return { bytes: Buffer.concat(chunks), over: true };
    }
  }
  return (await p.exited) === 0 ? { bytes: Buffer.concat(chunks), over: false } : null;
}

/**
 * The same git, without blocking the daemon's thread while it runs (reads of a large checkout,
 * e.g. `lazy ask`'s git status): what it printed (its first `maxBytes`), or null when it failed.
 */
export async function gitRead(cwd: string, args: string[], maxBytes = 64 * 1024): Promise<string | null> {
  const r = await readOut(cwd, args, maxBytes);
  return r?.bytes.toString("utf8", 0, Math.min(r.bytes.length, maxBytes)) ?? null;
}

/**
 * The same git's output as bytes (git archive: a tar), without blocking the daemon's thread;
 * "over" when it printed more than `maxBytes` (not read past it), null when it failed.
 */
export async function gitBytes(cwd: string, args: string[], maxBytes: number): Promise<Uint8Array | "over" | null> {
  const r = await readOut(cwd, args, maxBytes);
  return r && (r.over ? "over" : r.bytes);
}

/** What a bounded git run gave (gitBounded). */
export interface BoundedRun {
  /** Its exit code (null: lazy killed it, past `maxBytes` or `timeoutMs`). */
  code: number | null;
  /** What it printed, its first `maxBytes` at most. */
  out: Buffer;
  /** The last 16 KiB of what it said on stderr. */
  err: string;
  /** It printed more than `maxBytes`: killed, the rest not read. */
  cut: boolean;
  /** It ran past `timeoutMs`: killed. */
  late: boolean;
}

const ERR_KEEP = 16 * 1024;

/**
 * The same git, bounded every way a hostile repository could stretch it (a file of millions of
 * lines, a history of thousands of commits, a note of gigabytes): it runs without blocking the
 * daemon's thread, its output is read up to `maxBytes` and its time up to `timeoutMs`; past
 * either, git is killed and the answer says which. `stdin`: what git reads (cat-file --batch).
 */
export async function gitBounded(
  cwd: string,
  args: string[],
  opts: { maxBytes: number; timeoutMs: number; stdin?: string | Uint8Array },
): Promise<BoundedRun> {
  const p = Bun.spawn(["git", ...HARDENED, ...args], {
    cwd,
    env: gitEnv(),
    stdin: opts.stdin === undefined ? "ignore" : typeof opts.stdin === "string" ? Buffer.from(opts.stdin) : opts.stdin,
    stdout: "pipe",
    stderr: "pipe",
  });
  let late = false;
  let cut = false;
  const timer = setTimeout(() => {
    late = true;
    p.kill("SIGKILL");
  }, opts.timeoutMs);
  const err = (async () => {
    let tail = "";
    for await (const chunk of p.stderr) tail = (tail + Buffer.from(chunk).toString("utf8")).slice(-ERR_KEEP);
    return tail;
  })();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of p.stdout) {
      const room = opts.maxBytes - size;
      if (chunk.length > room) {
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size = opts.maxBytes;
        cut = true;
        p.kill("SIGKILL"); // enough: the rest is not read
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    const code = await p.exited;
    return { code: cut || late ? null : code, out: Buffer.concat(chunks), err: await err, cut, late };
  } finally {
    clearTimeout(timer);
  }
}
