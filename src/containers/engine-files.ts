/**
 * What lazy sends to a Docker engine and reads back from it besides containers themselves, for
 * a remote engine where nothing of this host can be mounted: tars into and out of a container
 * (the read bounded before a byte is kept), volumes of the engine's own filled through a
 * container that never starts, and a throwaway container for one short command.
 */
import type Docker from "dockerode";
import { LazyError } from "../util/errors";

export class EngineFiles {
  constructor(private docker: Docker) {}

  /**
   * Run a short command in a throwaway container on `network` (no mounts, no task's label, no
   * capability it does not need); its exit code and output. A remote engine's reachability probe.
   */
  async runOnce(
    image: string,
    network: string,
    cmd: string[],
    timeoutMs: number,
    volumes: { name: string; container: string }[] = [],
  ): Promise<{ code: number; output: string }> {
    let c: Docker.Container | undefined;
    try {
      c = await this.docker.createContainer({
        Image: image,
        Cmd: cmd,
        User: "65534:65534",
        Labels: { "dev.lazy.helper": "probe" },
        HostConfig: {
          NetworkMode: network,
          CapDrop: ["ALL"],
          Privileged: false,
          Mounts: volumes.map((v) => ({ Type: "volume" as const, Source: v.name, Target: v.container, ReadOnly: true })),
        },
      });
      await c.start();
      const done = (await Promise.race([c.wait(), Bun.sleep(timeoutMs).then(() => undefined)])) as { StatusCode: number } | undefined;
      const output = demux(Buffer.from((await c.logs({ stdout: true, stderr: true })) as unknown as Buffer));
      return done ? { code: done.StatusCode, output } : { code: -1, output: `no answer within ${timeoutMs / 1000} s` };
    } finally {
      await c?.remove({ force: true }).catch(() => {});
    }
  }

  /**
   * A volume on the engine holding `files` (a tar, tar.ts) at its root, made once per `name`
   * (a hash of what it holds): filled through a container of `image` that never starts, since
   * a remote engine gets nothing of this host but what is sent. Other volumes of the same
   * `kind` that no container uses are removed (one per lazy build would pile up).
   */
  async ensureVolume(name: string, kind: string, image: string, files: () => Uint8Array[]): Promise<void> {
    if (await this.volumeExists(name)) return;
    const label = "dev.lazy.volume";
    const { Volumes } = (await this.docker.listVolumes({ filters: { label: [`${label}=${kind}`] } })) as { Volumes?: { Name: string }[] };
    for (const v of Volumes ?? [])
      await this.docker
        .getVolume(v.Name)
        .remove()
        .catch(() => {}); // in use: kept
    await this.docker.createVolume({ Name: name, Labels: { [label]: kind } });
    try {
      await this.unpackInto(name, image, files, "/v");
    } catch (e) {
      await this.docker
        .getVolume(name)
        .remove()
        .catch(() => {}); // half filled: made again next time
      throw e;
    }
  }

  async volumeExists(name: string): Promise<boolean> {
    return this.docker
      .getVolume(name)
      .inspect()
      .then(
        () => true,
        () => false,
      );
  }

  /** Add `files` (a tar) to a volume of the engine's own (made when missing), through a container that never starts. */
  async fillVolume(name: string, kind: string, image: string, files: () => Uint8Array[]): Promise<void> {
    if (!(await this.volumeExists(name))) await this.docker.createVolume({ Name: name, Labels: { "dev.lazy.volume": kind } });
    await this.unpackInto(name, image, files, "/");
  }

  /** Remove a volume (a call's project tree, once its container is gone); one already gone is no error. */
  async removeVolume(name: string): Promise<void> {
    await this.docker
      .getVolume(name)
      .remove()
      .catch((e: { statusCode?: number }) => {
        if (e.statusCode !== 404) throw e;
      });
  }

  /** Unpack `files` (a tar) at `path` of a container of `image` that mounts the volume at /v and never starts. */
  private async unpackInto(volume: string, image: string, files: () => Uint8Array[], path: string): Promise<void> {
    const c = await this.docker.createContainer({
      Image: image,
      Cmd: ["true"],
      Labels: { "dev.lazy.helper": "volume" },
      HostConfig: { Mounts: [{ Type: "volume", Source: volume, Target: "/v" }] },
    });
    try {
      await c.putArchive(Buffer.concat(files()) as unknown as NodeJS.ReadableStream, { path });
    } finally {
      await c.remove({ force: true }).catch(() => {});
    }
  }

  /** Unpack a tar (tar.ts) at `path` in the container, running or not. */
  async putArchive(id: string, path: string, chunks: Uint8Array[]): Promise<void> {
    await this.docker.getContainer(id).putArchive(Buffer.concat(chunks) as unknown as NodeJS.ReadableStream, { path });
  }

  /**
   * What the engine says of `path` in the container (running or not): its size and change
   * time, without its bytes (a HEAD of the archive). undefined when the path does not exist.
   */
  async stat(id: string, path: string): Promise<{ size: number; mtime: string } | undefined> {
    let res: { headers: Record<string, string | undefined>; resume?: () => void };
    try {
      res = (await this.docker.getContainer(id).infoArchive({ path })) as typeof res;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return undefined;
      throw e;
    }
    res.resume?.();
    const header = res.headers["x-docker-container-path-stat"];
    if (!header) return undefined;
    const st = JSON.parse(Buffer.from(header, "base64").toString("utf8")) as { size?: unknown; mtime?: unknown };
    return { size: Number(st.size ?? 0), mtime: String(st.mtime ?? "") };
  }

  /**
   * A tar of `path` in the container (running or not), read to at most `maxBytes`: past that
   * the read stops and the answer is a refusal, so an agent cannot make lazy read without end.
   * undefined when the path does not exist.
   */
  async getArchive(id: string, path: string, maxBytes: number): Promise<Uint8Array | undefined> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = (await this.docker.getContainer(id).getArchive({ path })) as NodeJS.ReadableStream;
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode === 404) return undefined;
      throw e;
    }
    const parts: Buffer[] = [];
    let size = 0;
    await new Promise<void>((resolve, reject) => {
      stream.on("data", (c: Buffer) => {
        size += c.length;
        if (size > maxBytes) {
          (stream as unknown as { destroy: () => void }).destroy();
          reject(new LazyError("forbidden", `${path} in container ${id.slice(0, 12)} is over ${maxBytes} bytes: not brought back`));
          return;
        }
        parts.push(c);
      });
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    return Buffer.concat(parts);
  }
}

/** Non-TTY logs come in frames: a byte for the stream, three zeros, a 4-byte length, the bytes. */
export function demux(buf: Buffer): string {
  const parts: Buffer[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const len = buf.readUInt32BE(i + 4);
    parts.push(buf.subarray(i + 8, i + 8 + len));
    i += 8 + len;
  }
  return Buffer.concat(parts).toString("utf8");
}
