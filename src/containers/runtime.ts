/**
 * lazy's container runtime: the few things it does with Docker, behind its own interface.
 * dockerode is used here and in engine.ts only. Every container and network lazy makes is
 * labelled with its project (and task), so a restarted daemon finds what it started.
 */
import type Docker from "dockerode";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import * as Engine from "./engine";
import * as Image from "./image";

export const LABEL_PROJECT = "dev.lazy.project";
export const LABEL_TASK = "dev.lazy.task";
export const LABEL_ROOT = "dev.lazy.root";

export interface Mount {
  host: string;
  container: string;
  readOnly: boolean;
}

export interface TaskContainerSpec {
  name: string;
  image: string;
  project: string;
  root: string;
  taskId: string;
  user: string;
  env: Record<string, string>;
  mounts: Mount[];
  network: string;
  /** Docker Desktop: reach the host through host.docker.internal. */
  hostGateway: boolean;
  cmd: string[];
}

export interface Network {
  name: string;
  gateway: string;
}

export interface ContainerInfo {
  id: string;
  name: string;
  taskId: string | null;
  running: boolean;
  ip: string | null;
}

export class Runtime {
  private constructor(
    readonly endpoint: Engine.Endpoint,
    private docker: Docker,
    readonly kind: Engine.EngineKind,
    readonly kindDetail: string,
    private log: Logger,
  ) {}

  static async connect(log: Logger, endpoint = Engine.resolve()): Promise<Runtime> {
    const docker = await Engine.client(endpoint);
    try {
      const k = await Engine.kind(endpoint);
      return new Runtime(endpoint, docker, k.kind, k.detail, log);
    } catch (e) {
      throw new LazyError("launch_refused", `Cannot reach the Docker engine at ${endpoint.host} (${(e as Error).message}); run lazy doctor.`);
    }
  }

  /** Pinning a placeholder to its container's address works where the gateway is this host's own. */
  get pins(): boolean {
    return this.kind === "native";
  }

  /** The project's own bridge network; on native Linux its gateway is where the proxy listens for containers. */
  async ensureNetwork(project: string): Promise<Network> {
    const name = `lazy-${project}`;
    let net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    if (!net) {
      await this.docker.createNetwork({ Name: name, Driver: "bridge", Labels: { [LABEL_PROJECT]: project }, CheckDuplicate: true });
      net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    }
    const detail = (await this.docker.getNetwork(net!.Id).inspect()) as { IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] } };
    const gateway = detail.IPAM?.Config?.find((c) => c.Gateway && !c.Gateway.includes(":"))?.Gateway;
    if (!gateway) throw new LazyError("launch_refused", `Docker network ${name} has no IPv4 gateway; remove it (docker network rm ${name}) and try again.`);
    return { name, gateway };
  }

  /**
   * Remove the project's network once no container uses it: Docker's default address pools
   * hold about thirty networks, so one per project cannot stay forever.
   */
  async removeNetwork(project: string): Promise<string | undefined> {
    const name = `lazy-${project}`;
    const net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    if (!net) return undefined;
    const detail = (await this.docker.getNetwork(net.Id).inspect()) as { Containers?: Record<string, unknown>; IPAM?: { Config?: { Gateway?: string }[] } };
    if (Object.keys(detail.Containers ?? {}).length) return undefined;
    await this.docker.getNetwork(net.Id).remove();
    return detail.IPAM?.Config?.find((c) => c.Gateway && !c.Gateway.includes(":"))?.Gateway;
  }

  async imageExists(tag: string): Promise<boolean> {
    try {
      await this.docker.getImage(tag).inspect();
      return true;
    } catch {
      return false;
    }
  }

  /** Build an image from an in-memory context, reporting progress lines as they come. */
  async build(tag: string, files: Record<string, string | Uint8Array>, buildArgs: Record<string, string>, progress: (line: string) => void): Promise<void> {
    const archive = Image.tar(files);
    const stream = await this.docker.buildImage(Buffer.from(archive) as unknown as NodeJS.ReadableStream, { t: tag, buildargs: buildArgs, rm: true, forcerm: true, labels: { "dev.lazy.image": "1" } });
    const log = new Image.BuildLog();
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
          const failed = err?.message ?? out?.find((o) => o.error)?.error;
          if (failed) reject(log.failure(tag, failed));
          else resolve();
        },
        (event: { stream?: string; status?: string; progress?: string; id?: string; error?: string }) => {
          const text = event.stream ?? (event.status ? [event.id, event.status, event.progress].filter(Boolean).join(" ") : (event.error ?? ""));
          // Docker colours a step's stderr: the escapes go (logs, events and the CLI want text).
          for (const line of text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").split(/\r?\n|\r/)) {
            const l = line.trimEnd();
            if (!l) continue;
            log.add(l);
            progress(l);
          }
        },
      );
    });
  }

  async create(spec: TaskContainerSpec): Promise<string> {
    const c = await this.docker.createContainer({
      name: spec.name,
      Image: spec.image,
      Cmd: spec.cmd,
      User: spec.user,
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      WorkingDir: "/",
      Labels: { [LABEL_PROJECT]: spec.project, [LABEL_TASK]: spec.taskId, [LABEL_ROOT]: spec.root },
      HostConfig: {
        Binds: spec.mounts.map((m) => `${m.host}:${m.container}:${m.readOnly ? "ro" : "rw"}`),
        NetworkMode: spec.network,
        ExtraHosts: spec.hostGateway ? ["host.docker.internal:host-gateway"] : [],
        // No Docker socket, no privileged mode; an init reaps the agent's orphans.
        Privileged: false,
        Init: true,
      },
    });
    await c.start();
    return c.id;
  }

  async inspect(id: string): Promise<ContainerInfo | undefined> {
    try {
      const i = (await this.docker.getContainer(id).inspect()) as {
        Id: string;
        Name: string;
        State: { Running: boolean };
        Config: { Labels: Record<string, string> };
        NetworkSettings: { Networks: Record<string, { IPAddress?: string }> };
      };
      const ip = Object.values(i.NetworkSettings.Networks ?? {}).map((n) => n.IPAddress).find((a) => !!a) ?? null;
      return { id: i.Id, name: i.Name.replace(/^\//, ""), taskId: i.Config.Labels[LABEL_TASK] ?? null, running: i.State.Running, ip };
    } catch {
      return undefined;
    }
  }

  async list(project: string): Promise<ContainerInfo[]> {
    const cs = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_PROJECT}=${project}`] } });
    return cs.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      taskId: c.Labels[LABEL_TASK] ?? null,
      running: c.State === "running",
      ip: Object.values(c.NetworkSettings?.Networks ?? {}).map((n) => n.IPAddress).find((a) => !!a) ?? null,
    }));
  }

  /** Run a command in a running container, detached: the supervisor reports through files. Its exec id. */
  async execDetached(id: string, cmd: string[], env: Record<string, string>, user: string): Promise<string> {
    const exec = await this.docker.getContainer(id).exec({ Cmd: cmd, Env: Object.entries(env).map(([k, v]) => `${k}=${v}`), User: user, AttachStdout: false, AttachStderr: false, Tty: false });
    await exec.start({ Detach: true });
    return exec.id;
  }

  /** Whether a detached command still runs, and its exit code once it has ended (undefined: unknown). */
  async execState(execId: string): Promise<{ running: boolean; code: number | null } | undefined> {
    try {
      const i = (await this.docker.getExec(execId).inspect()) as { Running: boolean; ExitCode: number | null };
      return { running: i.Running, code: i.ExitCode };
    } catch {
      return undefined;
    }
  }

  /** Run a command and wait for it; its output and exit code. */
  async exec(id: string, cmd: string[], user: string, env: Record<string, string> = {}, cwd?: string): Promise<{ code: number; output: string }> {
    const exec = await this.docker.getContainer(id).exec({ Cmd: cmd, Env: Object.entries(env).map(([k, v]) => `${k}=${v}`), User: user, AttachStdout: true, AttachStderr: true, Tty: false, ...(cwd ? { WorkingDir: cwd } : {}) });
    const stream = await exec.start({ hijack: true, stdin: false });
    const chunks: Buffer[] = [];
    await new Promise<void>((resolve, reject) => {
      const sink = { write: (c: Buffer) => (chunks.push(Buffer.from(c)), true) } as unknown as NodeJS.WritableStream;
      this.docker.modem.demuxStream(stream, sink, sink);
      stream.on("end", () => resolve());
      stream.on("error", reject);
    });
    const info = (await exec.inspect()) as { ExitCode: number | null };
    return { code: info.ExitCode ?? -1, output: Buffer.concat(chunks).toString("utf8") };
  }

  async remove(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).remove({ force: true });
    } catch (e) {
      if (!/no such container|404/i.test((e as Error).message)) this.log.warn(`could not remove container ${id.slice(0, 12)}: ${(e as Error).message}`);
    }
  }
}
