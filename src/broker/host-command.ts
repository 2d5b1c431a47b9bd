/**
 * A command source's one run on the host (`gh auth token`): the daemon runs what lazy.toml names,
 * never a shell, never in a container, with the daemon's environment and the project root as its
 * cwd. lazy.toml is trust-bearing, but what the command prints and how long it runs are not
 * trusted: stdout is bounded before it is read whole, a run is killed (its whole process group,
 * so a `sh -c` wrapper's children die too) at the timeout, and what is said of stderr is one
 * bounded line with anything token-shaped cut out.
 */

/** The most a command may print; a token is far shorter. */
export const STDOUT_MAX = 64 * 1024;
/** How long a command may run before it is killed. */
export const TIMEOUT_MS = 20_000;
/** The stderr tail kept, and the most of its last line an error repeats. */
const STDERR_TAIL = 4096;
const LINE_MAX = 200;
/** After the command exits, how long a child of it that still holds stdout is waited for. */
const DRAIN_MS = 1_000;

export type Ran =
  | { kind: "ok"; token: string }
  | { kind: "spawn"; why: string }
  | { kind: "exit"; code: number | null; signal: string | null; stderr: string }
  | { kind: "timeout"; ms: number }
  | { kind: "overflow"; max: number }
  | { kind: "no-token"; why: string };

const TOKEN = /^[\x21-\x7e]{1,8192}$/;

/**
 * Cut secrets out of a line a user will see: the values given (a token the command printed) and
 * anything shaped like a token (a known prefix, or a long run of key characters).
 */
export function cut(text: string, known: readonly string[] = []): string {
  let out = text;
  for (const v of known) if (v.length >= 4) out = out.split(v).join("<redacted>");
  out = out.replace(/\b(?:gh[pousr]_|github_pat_|glpat-|npm_|pypi-|sk-|xox[abp]-)[A-Za-z0-9_-]+/g, "<redacted>");
  out = out.replace(/[A-Za-z0-9+=_-]{32,}/g, "<redacted>");
  return out.length > LINE_MAX ? `${out.slice(0, LINE_MAX)}…` : out;
}

function killGroup(child: { pid: number; kill(signal?: number | NodeJS.Signals): void }): void {
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
}

/** Read a stream to its end or until `stop` says so; `onChunk` returns false to stop early. */
async function drain(stream: ReadableStream<Uint8Array>, onChunk: (b: Uint8Array) => boolean, stop: Promise<void>): Promise<void> {
  const reader = stream.getReader();
  const stopped = stop.then(() => ({ done: true as const, value: undefined }));
  try {
    for (;;) {
      const r = await Promise.race([reader.read(), stopped]);
      if (r.done) break;
      if (!onChunk(r.value)) break;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

export async function runOnHost(argv: readonly string[], opts: { cwd: string; timeoutMs?: number }): Promise<Ran> {
  const timeoutMs = opts.timeoutMs ?? TIMEOUT_MS;
  let child: Bun.Subprocess<"ignore", "pipe", "pipe">;
  try {
    child = Bun.spawn([...argv], {
      cwd: opts.cwd,
      // Today's environment (Bun.spawn alone passes the one the daemon started with).
      env: { ...process.env },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      // Its own process group: a timeout kills what it started too.
      detached: true,
    });
  } catch (e) {
    return { kind: "spawn", why: cut(e instanceof Error ? e.message : String(e)) };
  }

  let timedOut = false;
  let overflow = false;
  let release!: () => void;
  const stop = new Promise<void>((r) => {
    release = r;
  });
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child);
    release();
  }, timeoutMs);

  const out: Uint8Array[] = [];
  let outBytes = 0;
  let err = Buffer.alloc(0);
  const reading = Promise.all([
    drain(
      child.stdout,
      (b) => {
        outBytes += b.byteLength;
        if (outBytes > STDOUT_MAX) {
          overflow = true;
          killGroup(child);
          release();
          return false;
        }
        out.push(b);
        return true;
      },
      stop,
    ),
    drain(
      child.stderr,
      (b) => {
        err = Buffer.concat([err, b]);
        if (err.byteLength > STDERR_TAIL) err = err.subarray(err.byteLength - STDERR_TAIL);
        return true;
      },
      stop,
    ),
  ]);
  await child.exited;
  // A child the command left behind may hold stdout open: wait a moment, then stop reading.
  const drainTimer = setTimeout(release, DRAIN_MS);
  await reading;
  clearTimeout(drainTimer);
  clearTimeout(timer);

  if (timedOut) return { kind: "timeout", ms: timeoutMs };
  if (overflow) return { kind: "overflow", max: STDOUT_MAX };
  const stdout = Buffer.concat(out).toString("utf8");
  const printed = stdout.split(/\r?\n/).map((l) => l.trim());
  if (child.exitCode !== 0) {
    const lines = err
      .toString("utf8")
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean);
    return {
      kind: "exit",
      code: child.exitCode,
      signal: child.signalCode === null ? null : String(child.signalCode),
      stderr: cut(lines.at(-1) ?? "", printed),
    };
  }
  const token = printed.find((l) => l.length > 0);
  if (token === undefined) return { kind: "no-token", why: "it printed nothing on stdout" };
  if (!TOKEN.test(token))
    return { kind: "no-token", why: "its first line is not one token (printable ASCII, no spaces, at most 8192 characters)" };
  return { kind: "ok", token };
}
