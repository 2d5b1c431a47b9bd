/**
 * The project's side of Docker, which agent turns, best-of-N checks and lazy's own calls share:
 * one connection to the engine, the project's network (its link-local guard and fence, said in
 * the log when they change, and where a container reaches the proxy on it), and the task image
 * (built once when missing, launches at once waiting on the one build). Container work, not a
 * task's lifecycle: the runner asks for it and records what it says.
 */
import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Config, type Harness, Trust, usedHarnesses } from "../config";
import { type Fence, HostNet, type LinkLocalGuard, type Network, type NetworkOptions } from "../network";
import { LazyError } from "../util/errors";
import type { Logger } from "../util/log";
import * as Engine from "./engine";
import * as Image from "./image";
import { LABEL_CONTEXT, LABEL_PROJECT } from "./labels";
import { Runtime } from "./runtime";

/** What the project's containers need of the model proxy (proxy/index.ts): where it listens. */
export interface ProxyListener {
  readonly address: { host: string; port: number } | null;
  listenFor(host: string): Promise<{ host: string; port: number }>;
}

/** What the fence needs of the egress proxy (egress/index.ts): its ports, and a container's proxy variables. */
export interface EgressFence {
  fenceFor(config: Config, gateway: string, proxyPort: number): Fence.Spec;
  envFor(config: Config, gateway: string): Record<string, string>;
}

export interface ProjectDeps {
  root: string;
  slug: string;
  stateDir: string;
  log: Logger;
  config: () => Config;
  proxy: ProxyListener;
  egress: EgressFence;
}

/** Where a container reaches the proxy, on which network. */
export interface Gateway {
  net: Network;
  proxyUrl: string;
}

/**
 * Where a remote engine's containers reach the proxy: `[proxy] remote_bind` (trusted config),
 * which must be set; loopback is this host's own and means nothing over there.
 */
export function bindFor(endpoint: Engine.Endpoint, config: Config): string {
  const bind = config.proxy.remote_bind;
  if (!bind)
    throw new LazyError(
      "launch_refused",
      `The Docker engine at ${endpoint.host} (${endpoint.source}) is remote: its containers cannot reach lazy's proxy on this host's loopback. Set [proxy] remote_bind in lazy.toml to an address of this host that engine can route to (then lazy trust), or unset DOCKER_HOST to use the local engine.`,
    );
  if (bind.startsWith("127.") || bind === "0.0.0.0")
    throw new LazyError(
      "launch_refused",
      `[proxy] remote_bind = "${bind}" is not an address a remote engine's containers can reach: name an address of this host on a network that engine routes to.`,
    );
  return bind;
}

/**
 * The task image as a launch uses it: `[container]`'s plan (image.ts) with the host's network
 * setup applied (its CA bundle changes the tag). `raw` is the plan before, `host` that setup.
 * The launch and the preflight (src/preflight) ask this one place. The default image holds the
 * harnesses the profiles use, and `also` (a launch's own profile's harness, a built-in one).
 */
export function taskImage(
  root: string,
  config: Config,
  also: readonly Harness[] = [],
): { image: Image.ImagePlan; host: HostNet.HostNetwork; raw: Image.ImagePlan } {
  const raw = Image.plan(root, config.container, usedHarnesses(config, also));
  const host: HostNet.HostNetwork = config.container.inherit_network_env ? HostNet.read() : { ca: null, proxy: {} };
  return { image: Image.withHostNetwork(raw, host), host, raw };
}

/**
 * Whether a task image lazy builds is to be built: missing, or (a project Dockerfile that copies
 * from its context) built from other files of it (its `dev.lazy.context` stamp). `dockerfile` is
 * the Dockerfile as the person wrote it (the plan's `raw`). The launch and the preflight ask this.
 */
export async function imageDue(
  docker: Runtime,
  root: string,
  image: Extract<Image.ImagePlan, { kind: "build" }>,
  dockerfile: string,
): Promise<{ missing: boolean; stale: boolean; stamp?: string }> {
  const stamp = image.context && Image.copiesContext(dockerfile) ? await Image.contextStamp(root, image.context) : undefined;
  const labels = await docker.imageLabels(image.tag);
  return { missing: labels === undefined, stale: labels !== undefined && stamp !== undefined && labels[LABEL_CONTEXT] !== stamp, stamp };
}

export class ProjectContainers {
  private runtime: Promise<Runtime> | undefined;
  /** The Docker endpoint the runtime connected to (lazy doctor compares it with the shell's). */
  private endpoint: Engine.Endpoint | undefined;
  /** The last word on whether the project's containers can reach link-local metadata addresses. */
  private guard: LinkLocalGuard | undefined;
  private fence: Fence.State | undefined;
  /** What task containers' environments add for the network fence (the egress proxy's address), as of the last gateway(). */
  private env: Record<string, string> = {};
  /**
   * What launches at once (best-of-N) share rather than each doing it: an image build of a tag
   * under way, and the network with its firewall rules being ensured (sharedGateway()).
   */
  private building = new Map<string, Promise<void>>();
  private ensuring: Promise<Gateway> | undefined;

  constructor(private d: ProjectDeps) {}

  /** One Runtime for the daemon: callers at start-up share the connection under way. */
  docker(): Promise<Runtime> {
    this.runtime ??= Runtime.connect(this.d.log).then(
      (r) => {
        this.endpoint = r.endpoint;
        return r;
      },
      (e: unknown) => {
        this.runtime = undefined; // the engine may come up later
        throw e;
      },
    );
    return this.runtime;
  }

  /** Where this daemon's containers run: the engine it connected to, or, before that, the one it would. */
  engineEndpoint(): Engine.Endpoint {
    return this.endpoint ?? Engine.resolve();
  }

  /** What task containers' environments add for the network, as of the last gateway(). */
  netEnv(): Record<string, string> {
    return this.env;
  }

  /** What the project's network options are now (the config reloads). */
  networkOptions(config: Config): NetworkOptions {
    let helperImage: string | undefined;
    try {
      helperImage = this.plan(config).image.tag;
    } catch {} // no task image yet (a missing Dockerfile): the guard says it needs one
    const fence = {
      mode: config.container.network,
      ports: async (gw: string) => this.d.egress.fenceFor(config, gw, (await this.d.proxy.listenFor(gw)).port).ports,
    };
    return { allowMetadata: config.container.allow_metadata, helperImage, fence };
  }

  /** The link-local guard's state, for lazy doctor; undefined until a network was ensured. */
  metadataGuard(): LinkLocalGuard | undefined {
    return this.guard;
  }

  /** The network fence's state, for lazy doctor; undefined until a network was ensured. */
  fenceState(): Fence.State | undefined {
    return this.fence;
  }

  /** The project's network as the config says now, its guard and fence noted. */
  async ensureNetwork(docker: Runtime, config: Config): Promise<Network> {
    const net = await docker.ensureNetwork(this.d.slug, this.networkOptions(config));
    this.noteGuard(net.guard);
    this.noteFence(net.fence);
    return net;
  }

  /** Keep the guard's state, and say it once in the log when it changes. */
  private noteGuard(g: LinkLocalGuard): void {
    const before = this.guard;
    this.guard = g;
    if (JSON.stringify(before) === JSON.stringify(g)) return;
    if (g.state === "blocked")
      this.d.log.info(`task containers cannot reach link-local metadata addresses (firewall rules on ${g.bridge})`);
    else if (g.state === "allowed")
      this.d.log.warn(`[container] allow_metadata = true: task containers can reach link-local metadata addresses such as 169.254.169.254`);
    else this.d.log.warn(`link-local metadata addresses are NOT blocked for task containers: ${g.reason}; ${g.remedy}`);
  }

  /** Say in the log when what task containers can reach changes (network/fence.ts). */
  private noteFence(f: Fence.State): void {
    const before = JSON.stringify(this.fence);
    this.fence = f;
    if (before === JSON.stringify(f)) return;
    if (f.state === "fenced")
      this.d.log.info(`network fence (${f.mode}) on ${f.bridge}: task containers reach only gateway ports ${f.ports.join(", ")}`);
    else if (f.state === "open") this.d.log.warn(`[container] network = "open": task containers reach any address (the fence is off)`);
    else this.d.log.warn(`the network fence is NOT set for task containers: ${f.reason}; ${f.remedy}`);
  }

  /**
   * Where a container reaches the proxy: the project network's gateway (native Linux), or
   * host.docker.internal (Docker Desktop). Agent turns and lazy's own calls alike.
   */
  async gateway(docker: Runtime, config: Config): Promise<Gateway> {
    // A remote engine's network is not this host's: its containers reach the proxy at [proxy] remote_bind.
    const bind = docker.remote ? bindFor(docker.endpoint, config) : undefined;
    const net = await this.ensureNetwork(docker, config);
    // A remote engine's containers get neither the egress proxy nor the host's CA file (nothing
    // of this host is mounted there).
    const fenced = docker.kind === "desktop" || bind ? {} : this.d.egress.envFor(config, net.gateway);
    this.env = bind ? {} : { ...this.hostEnv(config), ...fenced };
    if (bind) {
      const a = await this.d.proxy.listenFor(bind);
      return { net, proxyUrl: `http://${a.host}:${a.port}` };
    }
    if (docker.kind === "desktop") return { net, proxyUrl: `http://host.docker.internal:${this.d.proxy.address!.port}` };
    const a = await this.d.proxy.listenFor(net.gateway);
    return { net, proxyUrl: `http://${a.host}:${a.port}` };
  }

  /**
   * gateway(), with launches at once joining the one under way (Docker refuses a second
   * network of one name, and the rules are the same).
   */
  sharedGateway(docker: Runtime, config: Config): Promise<Gateway> {
    this.ensuring ??= this.gateway(docker, config).finally(() => {
      this.ensuring = undefined;
    });
    return this.ensuring;
  }

  /**
   * The task image's plan, with the host's network setup when [container] inherit_network_env
   * is on (network/host-network.ts): its CA bundle (checked; a file that does not parse is
   * refused by name) changes the tag, so a new certificate builds anew.
   */
  private plan(config: Config, also: readonly Harness[] = []): { image: Image.ImagePlan; host: HostNet.HostNetwork; raw: Image.ImagePlan } {
    return taskImage(this.d.root, config, also);
  }

  /**
   * The host's share of a task container's environment ([container] inherit_network_env): the
   * CA variables, and the host's proxy only where no fence puts lazy's egress proxy there and
   * only without a password in it (the agent could send it anywhere).
   */
  private hostEnv(config: Config): Record<string, string> {
    if (!config.container.inherit_network_env) return {};
    const { env, withheld } = HostNet.containerEnv(this.plan(config).host, config.container.network !== "open");
    if (withheld.length)
      this.d.log.warn(
        `the host's ${withheld.join(", ")} carries a password: task containers do not get it (network = "allowlist" or "observe" reach the network through lazy's egress proxy instead)`,
      );
    return env;
  }

  /** The host's CA bundle as a file in the state folder, for a task container to mount (null when none is inherited). */
  hostCa(config: Config): string | null {
    const ca = this.plan(config).host.ca;
    if (!ca) return null;
    const file = join(this.d.stateDir, `host-ca-${ca.hash}.pem`);
    if (!existsSync(file)) {
      const tmp = `${file}.${process.pid}.tmp`;
      writeFileSync(tmp, ca.pem, { mode: 0o644 });
      renameSync(tmp, file);
    }
    return file;
  }

  /**
   * The image tags housekeeping must keep: the one the config names now (undefined when it cannot
   * say: a Dockerfile gone missing) and those being built.
   */
  keptImages(config: Config): Set<string> {
    const keep = new Set(this.building.keys());
    try {
      keep.add(this.plan(config).image.tag);
    } catch {}
    return keep;
  }

  /** Whether the task image is there now, with no build under way for it (nothing is built here). */
  async imagePresent(docker: Runtime, config: Config): Promise<boolean> {
    const { image } = this.plan(config);
    return !this.building.has(image.tag) && (image.kind !== "build" || (await docker.imageExists(image.tag)));
  }

  /**
   * Whether the task image is to be built: missing, or (a project Dockerfile that copies from
   * its context) built from other files of it — a changed package.json, script or lockfile is
   * built again, under the same tag. `stamp` is the context's as it is now.
   */
  private due(
    docker: Runtime,
    image: Extract<Image.ImagePlan, { kind: "build" }>,
    dockerfile: string,
  ): Promise<{ missing: boolean; stale: boolean; stamp?: string }> {
    return imageDue(docker, this.d.root, image, dockerfile);
  }

  /**
   * Before a launch makes anything of its task: the files beside lazy.toml it is about to use
   * are as approved with lazy trust (config/trust.ts checkFiles) — the build context when the
   * image is to be built, the files [container] setup names when setup is to run,
   * .worktreeinclude when the worktree is to be made. A refusal here leaves no worktree, no
   * container and no half-built image behind; the build checks the bytes it sends once more.
   */
  async trusted(docker: Runtime, config: Config, parts: { setup: boolean; include: boolean }): Promise<void> {
    let context = false;
    if (config.container.dockerfile) {
      const { image, raw } = this.plan(config);
      if (image.kind === "build" && raw.kind === "build" && !this.building.has(image.tag)) {
        const d = await this.due(docker, image, raw.dockerfile);
        context = d.missing || d.stale;
      }
    }
    await Trust.checkFiles(this.d.root, config.container, { context: context ? "read" : undefined, ...parts });
  }

  /**
   * The task image, built first if it is missing. `say`, when given, hears the build's steps
   * (the runner records them as the task's `build` events). `also`: a harness the launch needs
   * that lazy.toml's profiles do not name (a built-in profile picked with --profile).
   */
  async image(
    docker: Runtime,
    config: Config,
    say?: (data: Record<string, unknown>) => void,
    also: readonly Harness[] = [],
  ): Promise<Image.ImagePlan> {
    const { image, host, raw } = this.plan(config, also);
    if (image.kind !== "build" || raw.kind !== "build") return image;
    const { missing, stale, stamp } = await this.due(docker, image, raw.dockerfile);
    if (missing || stale) {
      if (stale) {
        this.d.log.info(`the files ${image.what} copies changed since ${image.tag} was built: building it again`);
        say?.({ image: image.tag, rebuild: "the files its Dockerfile copies changed since it was built" });
      }
      // Another launch is building it (it found the same): wait for that build, then look again
      // (one that failed is tried anew, and its failure said here too).
      const under = this.building.get(image.tag);
      if (under) {
        say?.({ image: image.tag, what: "the image another task's launch is building (waiting for it)" });
        await under;
        return this.image(docker, config, say, also);
      }
      let done = () => {};
      this.building.set(
        image.tag,
        new Promise<void>((r) => {
          done = r;
        }),
      );
      try {
        await this.buildImage(docker, config, image, raw.dockerfile, host, say, stamp);
      } finally {
        this.building.delete(image.tag);
        done();
      }
    }
    return image;
  }

  private async buildImage(
    docker: Runtime,
    config: Config,
    image: Extract<Image.ImagePlan, { kind: "build" }>,
    approved: string,
    host: HostNet.HostNetwork,
    say?: (data: Record<string, unknown>) => void,
    stamp?: string,
  ): Promise<void> {
    // What runs at build is what the person approved (config/trust.ts): the Dockerfile as
    // written, before lazy adds the host's CA steps, and the very bytes of its context sent.
    if (config.container.dockerfile) Trust.checkDockerfile(this.d.root, config.container.dockerfile, approved);
    const { files, executable, read } = image.context
      ? await Image.contextOf(this.d.root, image.context, image.dockerfile, Image.copiesContext(approved))
      : { files: { Dockerfile: image.dockerfile } as Record<string, string | Uint8Array>, executable: undefined, read: [] };
    if (config.container.dockerfile) await Trust.checkFiles(this.d.root, config.container, { context: read });
    const where = await this.buildNetwork(docker, config, image.buildArgs);
    // lazy's default image says what its first build costs (measured: containers/image.ts FIRST_BUILD).
    say?.({ image: image.tag, what: image.what, ...(image.expect ? { expect: image.expect } : {}) });
    this.d.log.info(`building ${image.what} as ${image.tag} ${where.shown}${HostNet.describe(host)}`);
    if (host.ca) files[HostNet.CA_CONTEXT_NAME] = host.ca.pem;
    // The project that built it: lazy prune removes only its own project's images (runner/prune.ts).
    const labels = { [LABEL_PROJECT]: this.d.slug, ...(stamp ? { [LABEL_CONTEXT]: stamp } : {}) };
    const output = new BuildOutput(say);
    try {
      await docker.build({ tag: image.tag, files, executable, buildArgs: where.buildArgs, network: where.network, labels }, (line) => {
        // The agent can write what a build prints (a Dockerfile, a file it reads): one bounded line.
        this.d.log.info(
          `build: ${line.length > BuildOutput.LOG_MAX ? `${line.slice(0, BuildOutput.LOG_MAX)}… (${line.length} characters)` : line}`,
        );
        output.line(line);
      });
    } finally {
      output.end();
    }
    say?.({ done: image.tag });
  }

  /**
   * Where a build's RUN steps run: the project's network, fenced like task containers (a
   * Dockerfile's RUN line, an `npm ci` lifecycle script, is code from the checkout run as root),
   * with lazy's egress proxy as its HTTP(S)_PROXY build args in place of the host's (the egress
   * proxy chains to the host's own proxy: egress/chain.ts). Only `[container] build_network =
   * "host"` (trusted) builds on the host's network, with the host's proxy variables, as before.
   * Docker's classic builder (the API's build without BuildKit) takes a network's name as its
   * `networkmode`; BuildKit knows only default, host and none.
   */
  private async buildNetwork(
    docker: Runtime,
    config: Config,
    args: Record<string, string>,
  ): Promise<{ network: string; buildArgs: Record<string, string>; shown: string }> {
    if (config.container.build_network === "host")
      return { network: "host", buildArgs: args, shown: 'on the host\'s network ([container] build_network = "host")' };
    const { net } = await this.sharedGateway(docker, config);
    const egress = docker.remote || docker.kind === "desktop" ? {} : this.d.egress.envFor(config, net.gateway);
    const fence = net.fence;
    // Under the fence the host's proxy is out of reach: the egress proxy stands in for it.
    const buildArgs =
      fence.state === "fenced" || Object.keys(egress).length
        ? { ...Object.fromEntries(Object.entries(args).filter(([k]) => !HostNet.PROXY_VARS.includes(k as never))), ...egress }
        : args;
    const how =
      fence.state === "fenced"
        ? `fenced: ${fence.mode}${Object.keys(egress).length ? ", through lazy's egress proxy" : ""}`
        : fence.state === "open"
          ? 'not fenced: network = "open"'
          : `NOT fenced: ${fence.reason}`;
    return { network: net.name, buildArgs, shown: `on the project's network ${net.name} (${how})` };
  }
}

/**
 * What of a build's output becomes the task's `build` events, which the CLI shows live under
 * the step's timer (cli/progress.ts): every step, and of the lines a step prints the latest,
 * at most one a second — the latest is never held back longer, so a step that prints keeps the
 * line moving however fast it prints. Each line bounded; the CLI makes it inert for a terminal.
 */
export class BuildOutput {
  static readonly EVERY_MS = 1000;
  static readonly LINE_MAX = 300;
  static readonly LOG_MAX = 2000;
  /** Events one build may store (steps and lines): half an hour of a line a second; a build that goes on says so once. */
  static readonly EVENTS_MAX = 1800;
  private events = 0;
  private last = 0;
  private pending: string | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private say?: (data: Record<string, unknown>) => void) {
    if (say) this.timer = setInterval(() => this.flush(), BuildOutput.EVERY_MS);
  }

  line(line: string): void {
    if (!this.say) return;
    if (/^Step \d+\/\d+/.test(line)) {
      this.pending = undefined; // the step before's: the new step is what matters now
      this.store({ progress: line.slice(0, BuildOutput.LOG_MAX) });
      return;
    }
    if (!line.trim() || /^ ---> |^Removing intermediate container/.test(line)) return;
    this.pending = line.slice(0, BuildOutput.LINE_MAX);
    if (Date.now() - this.last >= BuildOutput.EVERY_MS) this.flush();
  }

  end(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private flush(): void {
    if (this.pending === undefined) return;
    this.store({ output: this.pending });
    this.pending = undefined;
    this.last = Date.now();
  }

  /** One event of the task's, while the build's bound allows (the daemon log keeps every line). */
  private store(data: Record<string, unknown>): void {
    this.events++;
    if (this.events < BuildOutput.EVENTS_MAX) this.say?.(data);
    else if (this.events === BuildOutput.EVENTS_MAX)
      this.say?.({ output: `(lazy stores no more of this build's lines: ${BuildOutput.EVENTS_MAX} kept; lazy daemon logs has the rest)` });
  }
}
