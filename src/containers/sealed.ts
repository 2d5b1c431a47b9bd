/**
 * An image looked at before a launch (src/preflight): its id, a pull of a named image that is
 * missing, and one short command run in a sealed throwaway container of it — no network, a
 * read-only root, every capability dropped, no new privileges, few pids, little memory, a
 * bounded log and a time limit. The command is the image's own (a harness's `--version`), so it
 * is treated as hostile: nothing of this host is mounted and what it prints is cut short.
 */
import type Docker from "dockerode";
import { demux } from "./engine-files";

/** What the sealed run keeps of the command's output, its end (its log is bounded on the engine too). */
export const OUTPUT_MAX = 4096;

/** The image's id, undefined when the engine has no such image; an engine that does not answer throws. */
export async function imageId(docker: Docker, tag: string): Promise<string | undefined> {
  try {
    const i = (await docker.getImage(tag).inspect()) as { Id: string };
    return i.Id;
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw e;
  }
}

/** Pull `tag`; the engine's refusal (no such repository, denied, unreachable) as its message. */
export async function pull(docker: Docker, tag: string, timeoutMs: number): Promise<{ ok: true } | { ok: false; error: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const stream = (await docker.pull(tag)) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
      docker.modem.followProgress(stream, (err: Error | null, out: { error?: string }[]) => {
        const failed = err?.message ?? out?.find((o) => o.error)?.error;
        if (failed) reject(new Error(failed));
        else resolve();
      });
    });
    return { ok: true };
  } catch (e) {
    return { ok: false, error: ((e as { json?: { message?: string } }).json?.message ?? (e as Error).message).trim() };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Run `argv` (argv[0] as the entrypoint, so the image's own entrypoint does not run) as `user`
 * in a sealed container of `image`: its exit code (-1: it did not end within `timeoutMs`, it
 * was killed) and at most the last OUTPUT_MAX characters of its output. The container is removed whatever happens.
 */
export async function run(
  docker: Docker,
  image: string,
  argv: string[],
  opts: { user: string; timeoutMs: number },
): Promise<{ code: number; output: string; timedOut: boolean }> {
  let c: Docker.Container | undefined;
  try {
    c = await docker.createContainer({
      Image: image,
      Entrypoint: [argv[0]!],
      Cmd: argv.slice(1),
      User: opts.user,
      Env: ["HOME=/tmp", "NO_COLOR=1", "CI=1"],
      WorkingDir: "/tmp",
      NetworkDisabled: true,
      Labels: { "dev.lazy.helper": "preflight" },
      HostConfig: {
        NetworkMode: "none",
        ReadonlyRootfs: true,
        // A harness may want a writable home for its --version; a small one, gone with the container.
        Tmpfs: { "/tmp": "rw,nosuid,nodev,size=16m" },
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        Privileged: false,
        PidsLimit: 64,
        // One core at most: a hostile image's --version does not take the machine for its 20 s.
        NanoCpus: 1e9,
        Memory: 512 * 1024 * 1024,
        MemorySwap: 512 * 1024 * 1024,
        // The engine keeps at most this much of what it prints, whatever it prints.
        LogConfig: { Type: "json-file", Config: { "max-size": "64k", "max-file": "1" } },
      },
    });
    await c.start();
    const done = (await Promise.race([c.wait(), Bun.sleep(opts.timeoutMs).then(() => undefined)])) as { StatusCode: number } | undefined;
    if (!done) await c.kill().catch(() => {});
    // What it printed, when the engine still has it: a container the engine marked dead as it
    // ended (a busy mount on cleanup, under load) has no logs to give, and its exit code, from
    // the wait, is still the answer (the launch preflight read that as "could not start").
    const logs = await c.logs({ stdout: true, stderr: true, tail: 50 }).catch(() => undefined);
    const raw = logs ? Buffer.from(logs as unknown as Buffer) : Buffer.alloc(0);
    // The end of what it printed: a failing program's last lines say why.
    const text = demux(raw);
    const output = text.length > OUTPUT_MAX ? text.slice(-OUTPUT_MAX) : text;
    return { code: done ? done.StatusCode : -1, output, timedOut: !done };
  } finally {
    // With its anonymous volumes: an image's VOLUME is writable past the read-only root.
    await c?.remove({ force: true, v: true }).catch(() => {});
  }
}
