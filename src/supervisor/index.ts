/**
 * The supervisor: lazy's own binary, mounted read-only into the task container, running next
 * to the agent. `lazy supervise --idle` keeps the container alive between turns;
 * `lazy supervise --turn DIR -- CMD...` runs one turn of the harness and reports through files
 * in DIR, which the daemon reads from the host: the harness's JSON events line by line
 * (events.jsonl), its stderr, its pid while it runs, and finally how it exited (exit.json).
 * Files, not a socket: a daemon that restarts mid-turn picks up where it left off.
 *
 * `--stdin FILE` starts the harness at once and hands it its prompt later: the supervisor waits
 * for FILE (the daemon writes it when a call comes), copies it to the harness's stdin and closes
 * it. lazy's own calls keep one such container warm, the harness started and waiting.
 */
import { spawn } from "node:child_process";
import { appendFileSync, createWriteStream, mkdirSync, readFileSync, renameSync, watch, writeFileSync } from "node:fs";
import { constants } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Writable } from "node:stream";

export const FILES = { events: "events.jsonl", stderr: "stderr.log", pid: "pid", started: "started.json", exit: "exit.json" } as const;

export interface Exit {
  code: number | null;
  signal: string | null;
  at: string;
  error?: string;
}

const writeJson = (file: string, v: unknown) => {
  writeFileSync(`${file}.tmp`, JSON.stringify(v));
  renameSync(`${file}.tmp`, file);
};

export async function idle(): Promise<number> {
  return new Promise((resolve) => {
    const t = setInterval(() => {}, 1 << 30);
    for (const sig of ["SIGTERM", "SIGINT"] as const)
      process.on(sig, () => {
        clearInterval(t);
        resolve(0);
      });
  });
}

/**
 * `lazy supervise --stop DIR`: signal the turn's harness from inside the container, so stopping
 * needs nothing of the image (not even a kill binary). 0 when signalled, 1 when nothing runs.
 */
export function stop(dir: string): number {
  let pid = NaN;
  try {
    pid = Number(readFileSync(join(dir, FILES.pid), "utf8").trim());
  } catch {}
  if (!Number.isInteger(pid) || pid <= 1) return 1;
  try {
    process.kill(pid, "SIGTERM");
    return 0;
  } catch {
    return 1;
  }
}

/** Copy `file` to `to` once it exists (written whole: the daemon renames it into place), then close `to`. */
function feedWhenReady(file: string, to: Writable): void {
  let done = false;
  const look = () => {
    if (done) return;
    let data: Buffer;
    try {
      data = readFileSync(file);
    } catch {
      return; // not there yet
    }
    done = true;
    watcher?.close();
    clearInterval(poll);
    to.end(data);
  };
  // inotify sees the daemon's rename through the bind mount at once; the poll is the fallback
  // where it does not (other engines' file sharing).
  let watcher: ReturnType<typeof watch> | undefined;
  try {
    watcher = watch(dirname(file), (_e, name) => name === basename(file) && look());
  } catch {}
  watcher?.unref();
  const poll = setInterval(look, 250);
  poll.unref(); // a harness that ends before its prompt came ends the turn
  to.on("error", () => {}); // the harness ended before reading: its exit says why
  look();
}

export async function turn(dir: string, cwd: string, cmd: string[], stdinFile?: string): Promise<number> {
  mkdirSync(dir, { recursive: true });
  const events = join(dir, FILES.events);
  writeFileSync(events, "");
  const stderr = createWriteStream(join(dir, FILES.stderr));
  const [bin, ...args] = cmd;
  if (!bin) {
    writeJson(join(dir, FILES.exit), { code: 127, signal: null, at: new Date().toISOString(), error: "no command" } satisfies Exit);
    return 127;
  }
  const child = spawn(bin, args, { cwd, stdio: [stdinFile ? "pipe" : "ignore", "pipe", "pipe"], env: process.env });
  if (stdinFile && child.stdin) feedWhenReady(stdinFile, child.stdin);
  const pass = (sig: NodeJS.Signals) => child.kill(sig);
  process.on("SIGTERM", pass);
  process.on("SIGINT", pass);
  return new Promise((resolve) => {
    let partial = "";
    child.on("spawn", () => {
      writeFileSync(join(dir, FILES.pid), String(child.pid));
      writeJson(join(dir, FILES.started), { pid: child.pid, at: new Date().toISOString() });
    });
    child.stdout!.on("data", (d: Buffer) => {
      // Whole lines only, so the daemon never reads half an event.
      partial += d.toString("utf8");
      const cut = partial.lastIndexOf("\n");
      if (cut === -1) return;
      appendFileSync(events, partial.slice(0, cut + 1));
      partial = partial.slice(cut + 1);
    });
    child.stderr!.pipe(stderr);
    let finished = false;
    const finish = (exit: Exit) => {
      if (finished) return;
      finished = true;
      if (partial) appendFileSync(events, partial + "\n");
      stderr.end();
      writeJson(join(dir, FILES.exit), exit);
      resolve(exit.code ?? 128 + (exit.signal ? (constants.signals[exit.signal as NodeJS.Signals] ?? 1) : 1));
    };
    child.on("error", (e) => finish({ code: 127, signal: null, at: new Date().toISOString(), error: e.message }));
    child.on("close", (code, signal) =>
      // A command that could not start reports a negative errno here: say so, as a shell would (127).
      finish(
        code !== null && code < 0
          ? {
              code: 127,
              signal: null,
              at: new Date().toISOString(),
              error: `${bin}: could not start (errno ${code}, ENOENT when not installed)`,
            }
          : { code, signal, at: new Date().toISOString() },
      ),
    );
  });
}
