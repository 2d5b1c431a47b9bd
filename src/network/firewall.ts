/**
 * The firewall lazy sets on a project's bridge, in one script (one run on the host as root, or
 * one helper container otherwise): the link-local guard (link-local.ts) and the network fence
 * (fence.ts), where that script runs, and what each came to, worded for the daemon's log and
 * lazy doctor.
 */
import type Docker from "dockerode";
import * as Fence from "./fence";
import * as LinkLocal from "./link-local";
import type { HelperEngine, On } from "./on";

/** How long the firewall script (or its helper container) may take. */
const TIMEOUT_MS = 30_000;

type Ran = { code: number; output: string } | { skipped: string };

export interface NetworkOptions {
  /** `[container] allow_metadata`: leave link-local addresses reachable from the project's containers. */
  allowMetadata: boolean;
  /** An image to run the firewall helper in when lazy is not root (the task image, once it exists). */
  helperImage?: string;
  /**
   * The fence to set on the bridge (fence.ts). `ports` is asked only where lazy sets the
   * firewall: the caller listens on the gateway first, so the rules name the ports it got.
   * Absent: "open".
   */
  fence?: { mode: Fence.Mode; ports: (gateway: string) => Promise<number[]> };
}

/**
 * Drop what the bridge's containers send to link-local metadata addresses (or, when the
 * project allows it, remove that), and fence the rest (fence.ts), in one script. Never
 * throws: where it cannot be done, the answer says why and what to do, for the daemon's log
 * and lazy doctor.
 */
export async function apply(
  at: HelperEngine &
    Pick<On, "kind" | "kindDetail"> & {
      project: string;
      bridge: string;
      gateway: string;
      opts: NetworkOptions;
    },
): Promise<{ guard: LinkLocal.Guard; fence: Fence.State }> {
  const { kind, kindDetail, project, bridge, gateway, opts } = at;
  const mode = opts.fence?.mode ?? "open";
  const unfenced = (g: LinkLocal.Guard): Fence.State =>
    mode === "open"
      ? { state: "open" }
      : {
          state: "unfenced",
          reason: g.state === "unblocked" ? g.reason.replace(/169\.254\.169\.254$/, "any address") : "the firewall script failed",
          remedy: g.state === "unblocked" ? g.remedy : "see the daemon log",
        };
  if (kind !== "native") {
    const g: LinkLocal.Guard = {
      state: "unblocked",
      reason: `${kindDetail} runs containers where lazy cannot set the firewall (${kind === "rootless" ? "rootless Docker's containers reach the network through the user's own process" : "not this host's network stack"}), so task containers may reach 169.254.169.254`,
      remedy: "block link-local metadata addresses in that engine's VM or host firewall, or use native Linux Docker",
    };
    return { guard: g, fence: unfenced(g) };
  }
  if (!LinkLocal.validBridge(bridge)) {
    const g: LinkLocal.Guard = {
      state: "unblocked",
      reason: `the network's bridge interface name ${JSON.stringify(bridge)} is not one lazy can use`,
      remedy: `remove the network (docker network rm lazy-${project}); lazy makes it again`,
    };
    return { guard: g, fence: unfenced(g) };
  }
  const spec: Fence.Spec = { mode, gateway, ports: mode === "open" || !opts.fence ? [] : await opts.fence.ports(gateway) };
  const fenceLines = Fence.applyLines(spec, LinkLocal.EXIT.fence);
  const script = opts.allowMetadata ? LinkLocal.removeScript(bridge, fenceLines) : LinkLocal.applyScript(bridge, fenceLines);
  const r = await run(at, project, script, opts.helperImage);
  if ("skipped" in r) {
    const g: LinkLocal.Guard = {
      state: "unblocked",
      reason: r.skipped,
      remedy: "run the daemon as root, or give it a task image (it runs the firewall helper in it)",
    };
    return { guard: g, fence: unfenced(g) };
  }
  const remedy = "install iptables (and ip6tables) on the host, or run the daemon as root, then lazy daemon restart";
  if (r.code === LinkLocal.EXIT.fence)
    return {
      guard: opts.allowMetadata ? { state: "allowed", bridge } : { state: "blocked", bridge },
      fence: {
        state: "unfenced",
        reason: `setting the ${Fence.PREFIX}${bridge} firewall rules failed (${LinkLocal.failure(r.code, r.output)}); until a later run repairs them the bridge may drop everything`,
        remedy,
      },
    };
  if (r.code !== 0) {
    const g: LinkLocal.Guard = {
      state: "unblocked",
      reason: `${opts.allowMetadata ? "removing" : "installing"} the ${LinkLocal.CHAIN} firewall rules for ${bridge} failed: ${LinkLocal.failure(r.code, r.output)}`,
      remedy,
    };
    return { guard: g, fence: unfenced(g) };
  }
  return {
    guard: opts.allowMetadata ? { state: "allowed", bridge } : { state: "blocked", bridge },
    fence: spec.mode === "open" ? { state: "open" } : { state: "fenced", mode: spec.mode, bridge, ports: spec.ports },
  };
}

/** Run a firewall script: on the host when lazy is root, else in the helper container. */
export function run(engine: HelperEngine, project: string, script: string, helperImage: string | undefined): Promise<Ran> {
  return process.getuid?.() === 0 ? onHost(script) : inHelper(engine, project, script, helperImage);
}

async function onHost(script: string): Promise<{ code: number; output: string }> {
  const p = Bun.spawn(["sh", "-c", script], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => p.kill("SIGKILL"), TIMEOUT_MS);
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
async function inHelper(engine: HelperEngine, project: string, script: string, image: string | undefined): Promise<Ran> {
  const { docker } = engine;
  if (!image || !(await engine.imageExists(image)))
    return { skipped: `lazy runs as uid ${process.getuid?.()} and has no task image yet to run its firewall helper in` };
  let c: Docker.Container | undefined;
  try {
    c = await docker.createContainer({
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
    const done = (await Promise.race([c.wait(), Bun.sleep(TIMEOUT_MS).then(() => undefined)])) as { StatusCode: number } | undefined;
    const output = engine.demux(Buffer.from((await c.logs({ stdout: true, stderr: true })) as unknown as Buffer));
    return done ? { code: done.StatusCode, output } : { code: -1, output: `no answer within ${TIMEOUT_MS / 1000} s` };
  } catch (e) {
    return { code: -1, output: `the helper container (image ${image}) could not run: ${(e as Error).message}` };
  } finally {
    await c?.remove({ force: true }).catch(() => {});
  }
}
