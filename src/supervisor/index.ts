/**
 * The supervisor: lazy's own binary, mounted read-only into the task container, running next
 * to the agent. `lazy supervise --idle` keeps the container alive between turns;
 * `lazy supervise --turn DIR -- CMD...` runs one turn of the harness and reports through files
 * in DIR, which the daemon reads from the host: the harness's JSON events line by line
 * (events.jsonl), its stderr, its pid while it runs, and finally how it exited (exit.json).
 * Files, not a socket: a daemon that restarts mid-turn picks up where it left off.
 */
import { spawn } from "node:child_process";
import { appendFileSync, createWriteStream, mkdirSync, writeFileSync, renameSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { constants } from "node:os";

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

export async function turn(dir: string, cwd: string, cmd: string[]): Promise<number> {
  mkdirSync(dir, { recursive: true });
  const events = join(dir, FILES.events);
  writeFileSync(events, "");
  const stderr = createWriteStream(join(dir, FILES.stderr));
  const [bin, ...args] = cmd;
  if (!bin) {
    writeJson(join(dir, FILES.exit), { code: 127, signal: null, at: new Date().toISOString(), error: "no command" } satisfies Exit);
    return 127;
  }
  const child = spawn(bin, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: process.env });
  const pass = (sig: NodeJS.Signals) => child.kill(sig);
  process.on("SIGTERM", pass);
  process.on("SIGINT", pass);
  return new Promise((resolve) => {
    let partial = "";
    child.on("spawn", () => {
      writeFileSync(join(dir, FILES.pid), String(child.pid));
      writeJson(join(dir, FILES.started), { pid: child.pid, at: new Date().toISOString() });
    });
    child.stdout.on("data", (d: Buffer) => {
      // Whole lines only, so the daemon never reads half an event.
      partial += d.toString("utf8");
      const cut = partial.lastIndexOf("\n");
      if (cut === -1) return;
      appendFileSync(events, partial.slice(0, cut + 1));
      partial = partial.slice(cut + 1);
    });
    child.stderr.pipe(stderr);
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
