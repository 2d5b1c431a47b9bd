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
import * as HostNet from "./host-network";
import * as LinkLocal from "./link-local";
import { hostConfig, type Limits } from "./limits";
import * as Fence from "./fence";
import * as Firewall from "./firewall";
import { EngineFiles, demux } from "./engine-files";
import type { NetworkOptions } from "./firewall";
import * as Subnets from "./subnets";

export type { NetworkOptions };

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
  /** Volumes of the engine's own (a remote engine: lazy's binary, copied there once), read-only. */
  volumes?: { name: string; container: string }[];
  network: string;
  /** Docker Desktop: reach the host through host.docker.internal. */
  hostGateway: boolean;
  cmd: string[];
  /** `[container.limits]` resolved for this host (0: none). */
  limits: Limits;
}

export interface Network {
  name: string;
  gateway: string;
  /** Whether its containers can reach link-local metadata addresses, and why. */
  guard: LinkLocal.Guard;
  /** What else its containers can reach (fence.ts), and why. */
  fence: Fence.State;
}

/** How long the firewall script (or its helper container) may take. */
const GUARD_TIMEOUT_MS = 30_000;

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
      const k = await Engine.kind(endpoint);
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

  /**
   * The project's own bridge network; on native Linux its gateway is where the proxy listens for
   * containers. Each call also (re)applies the link-local guard on its bridge: Docker or a
   * firewall reload can flush it, so the runner's housekeeping calls this again.
   */
  async ensureNetwork(project: string, opts: NetworkOptions): Promise<Network> {
    const name = `lazy-${project}`;
    let net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    if (!net) {
      await this.createNetwork(name, project);
      net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    }
    const detail = (await this.docker.getNetwork(net!.Id).inspect()) as {
      Id: string;
      Options?: Record<string, string>;
      IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] };
    };
    const gateway = detail.IPAM?.Config?.find((c) => c.Gateway && !c.Gateway.includes(":"))?.Gateway;
    if (!gateway)
      throw new LazyError(
        "launch_refused",
        `Docker network ${name} has no IPv4 gateway; remove it (docker network rm ${name}) and try again.`,
      );
    const { guard, fence } = await this.guard(project, LinkLocal.bridgeOf(detail), gateway, opts);
    return { name, gateway, guard, fence };
  }

  /**
   * A small subnet of lazy's own range, so Docker's default pools are never what runs out
   * (subnets.ts); Docker's own pool only when that range is full, its refusal worded.
   */
  private async createNetwork(name: string, project: string): Promise<void> {
    const create = (ipam?: { subnet: string; gateway: string }) =>
      this.docker.createNetwork({
        Name: name,
        Driver: "bridge",
        Labels: { [LABEL_PROJECT]: project },
        CheckDuplicate: true,
        ...(ipam ? { IPAM: { Driver: "default", Config: [{ Subnet: ipam.subnet, Gateway: ipam.gateway }] } } : {}),
      });
    const taken = ((await this.docker.listNetworks()) as { IPAM?: { Config?: { Subnet?: string }[] | null } }[]).flatMap((n) =>
      (n.IPAM?.Config ?? []).flatMap((c) => (c.Subnet ? [c.Subnet] : [])),
    );
    // A few tries: another project's daemon may take the same block between the list and the create.
    for (const ipam of Subnets.candidates(project, taken).slice(0, 8)) {
      try {
        await create(ipam);
        return;
      } catch (e) {
        const m = (e as Error).message;
        if (/already exists/i.test(m)) return; // a racing command of this project made it
        if (!Subnets.OVERLAP.test(m)) throw e;
      }
    }
    try {
      await create();
    } catch (e) {
      const m = (e as Error).message;
      if (/already exists/i.test(m)) return;
      if (Subnets.NO_POOL.test(m)) throw Subnets.exhausted(name, m.replace(/^\(HTTP code \d+\)[^-]*- /, "").trim());
      throw e;
    }
  }

  /** The link-local guard and the fence (firewall.ts), by a script on the host or in the helper. */
  private guard(project: string, bridge: string, gateway: string, opts: NetworkOptions) {
    return Firewall.apply({ kind: this.kind, kindDetail: this.kindDetail, project, bridge, gateway, opts }, (script) =>
      process.getuid?.() === 0 ? this.runHostScript(script) : this.runHelperScript(project, script, opts.helperImage),
    );
  }

  private async runHostScript(script: string): Promise<{ code: number; output: string }> {
    const p = Bun.spawn(["sh", "-c", script], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    const timer = setTimeout(() => p.kill("SIGKILL"), GUARD_TIMEOUT_MS);
    try {
      const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { code, output: out + err };
    } catch (e) {
      return { code: -1, output: (e as Error).message };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * lazy is not root but may use Docker: the script runs in a short-lived container in the
   * host's network namespace, with the host's own iptables (chroot into / mounted read-only)
   * and only the capabilities that needs. It carries no project label: it is not a task's.
   */
  private async runHelperScript(
    project: string,
    script: string,
    image: string | undefined,
  ): Promise<{ code: number; output: string } | { skipped: string }> {
    if (!image || !(await this.imageExists(image)))
      return { skipped: `lazy runs as uid ${process.getuid?.()} and has no task image yet to run its firewall helper in` };
    let c: Docker.Container | undefined;
    try {
      c = await this.docker.createContainer({
        name: `lazy-${project}-linklocal-${Math.random().toString(36).slice(2, 8)}`,
        Image: image,
        Entrypoint: ["chroot"],
        Cmd: ["/host", "sh", "-c", script],
        User: "0:0",
        Labels: { "dev.lazy.helper": "link-local" },
        HostConfig: {
          NetworkMode: "host",
          Binds: ["/:/host:ro"],
          CapDrop: ["ALL"],
          CapAdd: ["NET_ADMIN", "SYS_CHROOT"],
          Privileged: false,
        },
      });
      await c.start();
      const done = (await Promise.race([c.wait(), Bun.sleep(GUARD_TIMEOUT_MS).then(() => undefined)])) as
        | { StatusCode: number }
        | undefined;
      const logs = (await c.logs({ stdout: true, stderr: true })) as unknown as Buffer;
      const output = demux(Buffer.from(logs));
      return done ? { code: done.StatusCode, output } : { code: -1, output: `no answer within ${GUARD_TIMEOUT_MS / 1000} s` };
    } catch (e) {
      return { code: -1, output: `the helper container (image ${image}) could not run: ${(e as Error).message}` };
    } finally {
      await c?.remove({ force: true }).catch(() => {});
    }
  }

  /**
   * Remove the project's network once no container uses it: Docker's default address pools
   * hold about thirty networks, so one per project cannot stay forever.
   */
  async removeNetwork(project: string, opts: NetworkOptions): Promise<string | undefined> {
    const name = `lazy-${project}`;
    const net = (await this.docker.listNetworks({ filters: { name: [name] } })).find((n) => n.Name === name);
    if (!net) return undefined;
    const detail = (await this.docker.getNetwork(net.Id).inspect()) as {
      Id: string;
      Options?: Record<string, string>;
      Containers?: Record<string, unknown>;
      IPAM?: { Config?: { Gateway?: string }[] };
    };
    if (Object.keys(detail.Containers ?? {}).length) return undefined;
    await this.docker.getNetwork(net.Id).remove();
    // Its bridge is gone; so goes the jump that named it.
    const bridge = LinkLocal.bridgeOf(detail);
    if (this.kind === "native" && LinkLocal.validBridge(bridge)) {
      const script = LinkLocal.removeScript(bridge, Fence.removeLines());
      const r = process.getuid?.() === 0 ? await this.runHostScript(script) : await this.runHelperScript(project, script, opts.helperImage);
      if ("code" in r && r.code !== 0)
        this.log.warn(`could not remove the ${LinkLocal.CHAIN} jump for ${bridge}: ${LinkLocal.failure(r.code, r.output)}`);
    }
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
  async build(
    tag: string,
    files: Record<string, string | Uint8Array>,
    buildArgs: Record<string, string>,
    progress: (line: string) => void,
    /** "host": the build's RUN steps see the host's network (its loopback proxy, its own servers). */
    network?: "host",
  ): Promise<void> {
    const archive = Image.tar(files);
    const stream = await this.docker.buildImage(Buffer.from(archive) as unknown as NodeJS.ReadableStream, {
      t: tag,
      buildargs: buildArgs,
      ...(network ? { networkmode: network } : {}),
      rm: true,
      forcerm: true,
      labels: { "dev.lazy.image": "1" },
    });
    const log = new Image.BuildLog(buildArgs);
    const steps = new HostNet.StepNumbers(String(files.Dockerfile ?? ""));
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, out: { error?: string; errorDetail?: { message?: string } }[]) => {
          const failed = err?.message ?? out?.find((o) => o.error)?.error;
          if (failed) reject(log.failure(tag, failed));
          else resolve();
        },
        (event: { stream?: string; status?: string; progress?: string; id?: string; error?: string }) => {
          const text =
            event.stream ?? (event.status ? [event.id, event.status, event.progress].filter(Boolean).join(" ") : (event.error ?? ""));
          // Docker colours a step's stderr: the escapes go (logs, events and the CLI want text).
          // biome-ignore lint/suspicious/noControlCharactersInRegex: ESC is what the regex removes
          for (const line of text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").split(/\r?\n|\r/)) {
            const l = steps.line(line.trimEnd());
            if (!l) continue;
            log.add(l);
            progress(l);
          }
        },
      );
    });
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

  /** Run a command in a running container, detached: the supervisor reports through files. Its exec id. */
  async execDetached(id: string, cmd: string[], env: Record<string, string>, user: string): Promise<string> {
    const exec = await this.docker.getContainer(id).exec({
      Cmd: cmd,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      User: user,
      AttachStdout: false,
      AttachStderr: false,
      Tty: false,
    });
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
  async exec(
    id: string,
    cmd: string[],
    user: string,
    env: Record<string, string> = {},
    cwd?: string,
  ): Promise<{ code: number; output: string }> {
    const exec = await this.docker.getContainer(id).exec({
      Cmd: cmd,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      User: user,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      ...(cwd ? { WorkingDir: cwd } : {}),
    });
    const stream = await exec.start({ hijack: true, stdin: false });
    // What the command prints is kept up to its last EXEC_KEEP bytes (a project's check runs
    // code an agent wrote: it may print without end).
    const chunks: Buffer[] = [];
    let kept = 0;
    await new Promise<void>((resolve, reject) => {
      const sink = {
        write: (c: Buffer) => {
          chunks.push(Buffer.from(c));
          kept += c.length;
          while (kept > EXEC_KEEP && chunks.length > 1) kept -= chunks.shift()!.length;
          return true;
        },
      } as unknown as NodeJS.WritableStream;
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
      if (!/no such container|404/i.test((e as Error).message))
        this.log.warn(`could not remove container ${id.slice(0, 12)}: ${(e as Error).message}`);
    }
  }
}

/** What Runtime.exec keeps of a command's output: its last bytes, up to this many. */
const EXEC_KEEP = 1024 * 1024;
