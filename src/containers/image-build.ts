/**
 * An image on the engine: whether a tag is there, and building one from an in-memory context
 * (tar.ts's archive), its progress lines passed on as they come and a failure worded with the
 * lines that led to it (image.ts's BuildLog).
 */
import type Docker from "dockerode";
import { HostNet } from "../network";
import { stripAnsi } from "../util/ansi";
import * as Image from "./image";
import { LABEL_IMAGE } from "./labels";
import * as Tar from "./tar";

export async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  return (await imageLabels(docker, tag)) !== undefined;
}

/** An image's labels ({} when it has none); undefined when there is no such image. */
export async function imageLabels(docker: Docker, tag: string): Promise<Record<string, string> | undefined> {
  try {
    const i = (await docker.getImage(tag).inspect()) as { Config?: { Labels?: Record<string, string> | null } };
    return i.Config?.Labels ?? {};
  } catch {
    return undefined;
  }
}

/** What to build: the tag, its context, its build arguments, and the network its RUN steps see. */
export interface Job {
  tag: string;
  files: Record<string, string | Uint8Array>;
  /** The files of `files` that are executable (mode 755 in the context). */
  executable?: ReadonlySet<string>;
  buildArgs: Record<string, string>;
  /**
   * The network the build's RUN steps run on: a network's name (the project's, fenced), or
   * "host" (the host's network: its loopback proxy, its own servers). The classic builder takes both.
   */
  network?: string;
  /** Labels for the image, besides lazy's own mark. */
  labels?: Record<string, string>;
}

/** Build `job.tag`, passing each progress line on as it comes. */
export async function build(docker: Docker, job: Job, progress: (line: string) => void): Promise<void> {
  const { tag, files, buildArgs, network } = job;
  const entries = Object.entries(files).map(([name, data]): Tar.Entry => {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    return { name, type: "file", mode: job.executable?.has(name) ? 0o755 : 0o644, uid: 0, data: bytes };
  });
  const stream = await docker.buildImage(Buffer.concat(Tar.write(entries)) as unknown as NodeJS.ReadableStream, {
    t: tag,
    buildargs: buildArgs,
    ...(network ? { networkmode: network } : {}),
    rm: true,
    forcerm: true,
    labels: { ...job.labels, [LABEL_IMAGE]: "1" },
  });
  const log = new Image.BuildLog(buildArgs);
  const steps = new HostNet.StepNumbers(String(files.Dockerfile ?? ""));
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
        const failed = err?.message ?? out?.find((o) => o.error)?.error;
        if (failed) reject(log.failure(tag, failed));
        else resolve();
      },
      (event: { stream?: string; status?: string; progress?: string; id?: string; error?: string }) => {
        const text =
          event.stream ?? (event.status ? [event.id, event.status, event.progress].filter(Boolean).join(" ") : (event.error ?? ""));
        // Docker colours a step's stderr: the escapes go (logs, events and the CLI want text;
        // the CLI shows what control bytes are left as text: cli/terminal.ts).
        for (const line of stripAnsi(text).split(/\r?\n|\r/)) {
          const l = steps.line(line.trimEnd());
          if (!l) continue;
          log.add(l);
          progress(l);
        }
      },
    );
  });
}
