/**
 * Commands run in a task's running container: detached (the supervisor, which reports through
 * files) and asked after by exec id, or waited for with the last of their output kept.
 */
import type Docker from "dockerode";

/** What `run` keeps of a command's output: its last bytes, up to this many. */
const KEEP = 1024 * 1024;

function open(
  docker: Docker,
  id: string,
  cmd: string[],
  user: string,
  env: Record<string, string>,
  attach: boolean,
  cwd?: string,
): Promise<Docker.Exec> {
  return docker.getContainer(id).exec({
    Cmd: cmd,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    User: user,
    AttachStdout: attach,
    AttachStderr: attach,
    Tty: false,
    ...(cwd ? { WorkingDir: cwd } : {}),
  });
}

/** Start a command and leave it running; its exec id. */
export async function detached(docker: Docker, id: string, cmd: string[], env: Record<string, string>, user: string): Promise<string> {
  const exec = await open(docker, id, cmd, user, env, false);
  await exec.start({ Detach: true });
  return exec.id;
}

/** Whether a detached command still runs, and its exit code once it has ended (undefined: unknown). */
export async function state(docker: Docker, execId: string): Promise<{ running: boolean; code: number | null } | undefined> {
  try {
    const i = (await docker.getExec(execId).inspect()) as { Running: boolean; ExitCode: number | null };
    return { running: i.Running, code: i.ExitCode };
  } catch {
    return undefined;
  }
}

/** Run a command and wait for it; its output and exit code. */
export async function run(
  docker: Docker,
  id: string,
  cmd: string[],
  user: string,
  env: Record<string, string>,
  cwd?: string,
): Promise<{ code: number; output: string }> {
  const exec = await open(docker, id, cmd, user, env, true, cwd);
  const stream = await exec.start({ hijack: true, stdin: false });
  // What the command prints is kept up to its last KEEP bytes (a project's check runs code an
  // agent wrote: it may print without end).
  const chunks: Buffer[] = [];
  let kept = 0;
  await new Promise<void>((resolve, reject) => {
    const sink = {
      write: (c: Buffer) => {
        chunks.push(Buffer.from(c));
        kept += c.length;
        while (kept > KEEP && chunks.length > 1) kept -= chunks.shift()!.length;
        return true;
      },
    } as unknown as NodeJS.WritableStream;
    docker.modem.demuxStream(stream, sink, sink);
    stream.on("end", () => resolve());
    stream.on("error", reject);
  });
  const info = (await exec.inspect()) as { ExitCode: number | null };
  return { code: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString("utf8") };
}
