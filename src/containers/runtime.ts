/**
 * lazy's container runtime: the few things it does with Docker, behind its own interface
 * (dockerode lives in the containers/ files that take its client: this one, engine.ts,
 * engine-files.ts, network.ts, firewall.ts, image-build.ts, exec.ts). Every container and
 * network lazy makes is labelled with its project (and task), so a restarted daemon finds what
 * it started (labels.ts).
 */
import type Docker from "dockerode";
import { ensureBridge, type Network, type NetworkEngine, type NetworkOptions, removeBridge } from "../network";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import * as Engine from "./engine";
import { demux, EngineFiles } from "./engine-files";
import * as Exec from "./exec";
import * as ImageBuild from "./image-build";
import { LABEL_IMAGE, LABEL_PROJECT, LABEL_ROOT, LABEL_TASK } from "./labels";
import { hostConfig, type Limits } from "./limits";
import * as Sealed from "./sealed";

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
  /** Volumes of the engine's own (a remote engine: lazy's binary, copied there once), read-only. */
  volumes?: { name: string; container: string }[];
  network: string;
  /** Docker Desktop: reach the host through host.docker.internal. */
  hostGateway: boolean;
  cmd: string[];
  /** `[container.limits]` resolved for this host (0: none). */
  limits: Limits;
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
  ) {
    this.files = new EngineFiles(docker);
  }

  /** Tars in and out of containers, volumes, one-off commands (engine-files.ts): a remote engine's traffic. */
  readonly files: EngineFiles;

  static async connect(log: Logger, endpoint = Engine.resolve()): Promise<Runtime> {
    const docker = await Engine.client(endpoint);
    try {
      const k = await Engine.kind(endpoint, docker);
      return new Runtime(endpoint, docker, k.kind, k.detail, log);
    } catch (e) {
      if (e instanceof LazyError) throw e;
      throw new LazyError("launch_refused", Engine.unreachable(endpoint, (e as Error).message));
    }
  }

  /** Pinning a placeholder to its container's address works where the gateway is this host's own. */
  get pins(): boolean {
    return this.kind === "native";
  }

  /** The engine networks are made on (the network room, src/network), with the helpers its firewall uses. */
  private get on(): NetworkEngine {
    return {
      docker: this.docker,
      kind: this.kind,
      kindDetail: this.kindDetail,
      log: this.log,
      projectLabel: LABEL_PROJECT,
      imageExists: (image) => ImageBuild.imageExists(this.docker, image),
      demux,
    };
  }

  /**
   * The project's own bridge network, its firewall (re)applied: Docker or a firewall reload can
   * flush it, so the runner's housekeeping calls this again.
   */
  ensureNetwork(project: string, opts: NetworkOptions): Promise<Network> {
    return ensureBridge(this.on, project, opts);
  }

  /** Remove the project's network once no container uses it; the gateway it had, if it went. */
  removeNetwork(project: string, opts: NetworkOptions): Promise<string | undefined> {
    return removeBridge(this.on, project, opts);
  }

  imageExists(tag: string): Promise<boolean> {
    return ImageBuild.imageExists(this.docker, tag);
  }

  /** An image's id; undefined when the engine has no such image (an engine that does not answer throws). */
  imageId(tag: string): Promise<string | undefined> {
    return Sealed.imageId(this.docker, tag);
  }

  /** Pull a named image (sealed.ts); the engine's refusal as its message. */
  pull(tag: string, timeoutMs: number): ReturnType<typeof Sealed.pull> {
    return Sealed.pull(this.docker, tag, timeoutMs);
  }

  /** One short command of the image's own in a sealed throwaway container (sealed.ts: no network, read-only, no capabilities). */
  sealed(image: string, argv: string[], opts: { user: string; timeoutMs: number }): ReturnType<typeof Sealed.run> {
    return Sealed.run(this.docker, image, argv, opts);
  }

  /** An image's labels; undefined when there is no such image. */
  imageLabels(tag: string): Promise<Record<string, string> | undefined> {
    return ImageBuild.imageLabels(this.docker, tag);
  }

  /** Build an image from an in-memory context, reporting progress lines as they come (image-build.ts). */
  build(job: ImageBuild.Job, progress: (line: string) => void): Promise<void> {
    return ImageBuild.build(this.docker, job, progress);
  }

  /** A remote engine: nothing of this host can be mounted there (remote.ts ships it instead). */
  get remote(): boolean {
    return this.kind === "remote";
  }

  /**
   * Make a container; `start: false` leaves it created (a remote engine's container gets its
   * files shipped in before it starts). A remote engine takes no host mount at all.
   */
  async create(spec: TaskContainerSpec, opts: { start?: boolean } = {}): Promise<string> {
    if (this.remote && spec.mounts.length)
      throw new LazyError(
        "launch_refused",
        `The Docker engine at ${this.endpoint.host} is remote: lazy mounts nothing of this host there (${spec.mounts[0]!.host} was asked for).`,
      );
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
        Mounts: (spec.volumes ?? []).map((v) => ({ Type: "volume" as const, Source: v.name, Target: v.container, ReadOnly: true })),
        NetworkMode: spec.network,
        ExtraHosts: spec.hostGateway ? ["host.docker.internal:host-gateway"] : [],
        // No Docker socket, no privileged mode; an init reaps the agent's orphans. Nor the
        // capabilities to forge packets (raw sockets), make device nodes or grant file
        // capabilities: the agent's sudo needs none of them.
        Privileged: false,
        CapDrop: ["NET_RAW", "MKNOD", "SETFCAP"],
        Init: true,
        ...hostConfig(spec.limits), // [container.limits] (limits.ts)
      },
    });
    if (opts.start !== false) await c.start();
    return c.id;
  }

  /** Start a stopped container again (its filesystem as it was left); 304 is "already running". */
  async start(id: string): Promise<void> {
    await this.docker
      .getContainer(id)
      .start()
      .catch((e: { statusCode?: number }) => {
        if (e.statusCode !== 304) throw e;
      });
  }

  /**
   * Stop a container at once (SIGKILL to its init: the kernel ends every process in its pid
   * namespace with it) and check it is no longer running; a second, harder try if it still is.
   * Resolves to what is still wrong, or undefined when it is stopped (or gone).
   */
  async halt(id: string): Promise<string | undefined> {
    const c = this.docker.getContainer(id);
    for (const how of ["docker stop", "SIGKILL", "SIGKILL"] as const) {
      await (how === "docker stop" ? c.stop({ t: 0 }) : c.kill({ signal: how })).catch((e: { statusCode?: number; message?: string }) => {
        if (![304, 404, 409].includes(e.statusCode ?? 0)) this.log.warn(`stopping container ${id.slice(0, 12)}: ${e.message}`);
      });
      await Promise.race([c.wait({ condition: "not-running" }).catch(() => {}), Bun.sleep(10_000)]);
      if (!(await this.inspect(id))?.running) return undefined; // stopped, or gone
      this.log.error(`container ${id.slice(0, 12)} still runs after ${how}: killing it harder`);
    }
    return `container ${id.slice(0, 12)} still runs after docker stop and two SIGKILLs`;
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
      const ip =
        Object.values(i.NetworkSettings.Networks ?? {})
          .map((n) => n.IPAddress)
          .find((a) => !!a) ?? null;
      return { id: i.Id, name: i.Name.replace(/^\//, ""), taskId: i.Config.Labels[LABEL_TASK] ?? null, running: i.State.Running, ip };
    } catch {
      return undefined;
    }
  }

  /**
   * Where a container's writable layer lies on this host (overlay2's upper folder), when the
   * engine is this machine's own and the folder is there to walk; undefined otherwise (a remote
   * engine, Docker Desktop's VM, another storage driver).
   */
  async layerDir(id: string): Promise<string | undefined> {
    if (this.remote || this.kind === "desktop") return undefined;
    try {
      const i = (await this.docker.getContainer(id).inspect()) as { GraphDriver?: { Name?: string; Data?: Record<string, string> } };
      return i.GraphDriver?.Name?.startsWith("overlay") ? i.GraphDriver.Data?.UpperDir : undefined;
    } catch {
      return undefined;
    }
  }

  /** The bytes a container wrote to its writable layer, as the engine counts them (it walks the layer: costly, so rarely). */
  async writableSize(id: string): Promise<number | undefined> {
    try {
      const i = (await this.docker.getContainer(id).inspect({ size: true } as Docker.ContainerInspectOptions)) as { SizeRw?: number };
      return typeof i.SizeRw === "number" ? i.SizeRw : undefined;
    } catch {
      return undefined;
    }
  }

  private root: Promise<string | undefined> | undefined;
  /** The engine's data folder on this host (its layers' filesystem), when it is this machine's. */
  dataRoot(): Promise<string | undefined> {
    if (this.remote || this.kind === "desktop") return Promise.resolve(undefined);
    this.root ??= this.docker
      .info()
      .then((i: { DockerRootDir?: string }) => i.DockerRootDir)
      .catch(() => undefined);
    return this.root;
  }

  async list(project: string): Promise<ContainerInfo[]> {
    const cs = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL_PROJECT}=${project}`] } });
    return cs.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      taskId: c.Labels[LABEL_TASK] ?? null,
      running: c.State === "running",
      ip:
        Object.values(c.NetworkSettings?.Networks ?? {})
          .map((n) => n.IPAddress)
          .find((a) => !!a) ?? null,
    }));
  }

  /**
   * The project's containers with the bytes each wrote to its writable layer (the engine walks
   * each layer: costly, so only `lazy prune` asks).
   */
  async listSized(project: string): Promise<(ContainerInfo & { bytes: number })[]> {
    const cs = await this.docker.listContainers({ all: true, size: true, filters: { label: [`${LABEL_PROJECT}=${project}`] } });
    return cs.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      taskId: c.Labels[LABEL_TASK] ?? null,
      running: c.State === "running",
      ip: null,
      bytes: (c as { SizeRw?: number }).SizeRw ?? 0,
    }));
  }

  /**
   * The images lazy built for `project` (labelled `dev.lazy.image` and with the project, at build:
   * image-build.ts, project.ts): their tags, ids and sizes. An image of another project, or one
   * built before images carried their project, is not listed.
   */
  async lazyImages(project: string): Promise<{ id: string; tags: string[]; bytes: number }[]> {
    const is = await this.docker.listImages({ filters: { label: [`${LABEL_IMAGE}=1`, `${LABEL_PROJECT}=${project}`] } });
    return is.map((i) => ({ id: i.Id, tags: (i.RepoTags ?? []).filter((t) => t !== "<none>:<none>"), bytes: i.Size ?? 0 }));
  }

  /** The ids of the images any container on the engine was made from (any project, lazy's or not, running or not). */
  async imagesInUse(): Promise<Set<string>> {
    const cs = await this.docker.listContainers({ all: true });
    return new Set(cs.map((c) => c.ImageID));
  }

  /**
   * Remove a container only if it is not running (no force: the engine refuses a running one,
   * whatever lazy thought). What went wrong, or undefined when it is gone.
   */
  async removeStopped(id: string): Promise<string | undefined> {
    try {
      await this.docker.getContainer(id).remove({ force: false, v: false });
      return undefined;
    } catch (e) {
      return /no such container|404/i.test((e as Error).message) ? undefined : (e as Error).message;
    }
  }

  /** Remove an image by tag, never by force (the engine refuses one a container uses). What went wrong, or undefined. */
  async removeImage(tag: string): Promise<string | undefined> {
    try {
      await this.docker.getImage(tag).remove({ force: false, noprune: false });
      return undefined;
    } catch (e) {
      return /no such image|404/i.test((e as Error).message) ? undefined : (e as Error).message;
    }
  }

  /** Run a command in a running container, detached: the supervisor reports through files. Its exec id. */
  execDetached(id: string, cmd: string[], env: Record<string, string>, user: string): Promise<string> {
    return Exec.detached(this.docker, id, cmd, env, user);
  }

  /** Whether a detached command still runs, and its exit code once it has ended (undefined: unknown). */
  execState(execId: string): Promise<{ running: boolean; code: number | null } | undefined> {
    return Exec.state(this.docker, execId);
  }

  /** Run a command and wait for it; its output (the last MiB of it) and exit code. */
  exec(id: string, cmd: string[], user: string, env: Record<string, string> = {}, cwd?: string): Promise<{ code: number; output: string }> {
    return Exec.run(this.docker, id, cmd, user, env, cwd);
  }

  async remove(id: string): Promise<void> {
    try {
      await this.docker.getContainer(id).remove({ force: true });
    } catch (e) {
      if (!/no such container|404/i.test((e as Error).message))
        this.log.warn(`could not remove container ${id.slice(0, 12)}: ${(e as Error).message}`);
    }
  }
}
