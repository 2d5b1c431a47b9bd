/**
 * Which Docker engine lazy talks to: DOCKER_HOST, else the active docker context, else the
 * default socket. docker-modem ignores contexts (colima, OrbStack), so lazy resolves them.
 * dockerode appears in this folder only, and loads on first use: it costs ~0.3 s to import,
 * which every CLI command would otherwise pay.
 */
import type Docker from "dockerode";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";

export interface Endpoint {
  /** unix:///var/run/docker.sock, tcp://host:2376, ... */
  host: string;
  /** Where the choice came from, for doctor. */
  source: "DOCKER_HOST" | `context ${string}` | "default socket";
}

export function resolve(env: Record<string, string | undefined> = process.env): Endpoint {
  if (env.DOCKER_HOST) return { host: env.DOCKER_HOST, source: "DOCKER_HOST" };
  const dockerDir = env.DOCKER_CONFIG ?? join(homedir(), ".docker");
  let context = env.DOCKER_CONTEXT;
  if (!context) {
    try {
      context = (JSON.parse(readFileSync(join(dockerDir, "config.json"), "utf8")) as { currentContext?: string }).currentContext;
    } catch {}
  }
  if (context && context !== "default") {
    const meta = join(dockerDir, "contexts", "meta", createHash("sha256").update(context).digest("hex"), "meta.json");
    try {
      const host = (JSON.parse(readFileSync(meta, "utf8")) as { Endpoints?: { docker?: { Host?: string } } }).Endpoints?.docker?.Host;
      if (host) return { host, source: `context ${context}` };
    } catch {}
  }
  const candidates = ["/var/run/docker.sock", join(homedir(), ".docker/run/docker.sock")];
  const sock = candidates.find((c) => existsSync(c)) ?? candidates[0]!;
  return { host: `unix://${sock}`, source: "default socket" };
}

export async function client(ep: Endpoint): Promise<Docker> {
  const { default: Docker } = await import("dockerode");
  if (ep.host.startsWith("unix://")) return new Docker({ socketPath: ep.host.slice("unix://".length) });
  const u = new URL(ep.host.replace(/^tcp:/, "http:"));
  return new Docker({ host: u.hostname, port: Number(u.port || 2375), protocol: "http" });
}

export async function ping(
  ep: Endpoint,
  timeoutMs = 3000,
): Promise<{ ok: true; version: string; os: string } | { ok: false; error: string }> {
  try {
    const d = await client(ep);
    const v = (await Promise.race([
      d.version(),
      Bun.sleep(timeoutMs).then(() => {
        throw new Error(`no answer within ${timeoutMs} ms`);
      }),
    ])) as { Version: string; Os: string };
    return { ok: true, version: v.Version, os: v.Os };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

export type EngineKind = "native" | "desktop" | "rootless" | "remote";

/**
 * Where the engine runs, which decides how containers reach the proxy and whether a
 * placeholder can be pinned to its container's address (only where the container's gateway
 * is an address of this host: native Linux Docker).
 */
export async function kind(ep: Endpoint): Promise<{ kind: EngineKind; detail: string }> {
  const remote = !ep.host.startsWith("unix://") && !ep.host.startsWith("npipe://");
  const d = await client(ep);
  const info = (await d.info()) as { OperatingSystem?: string; SecurityOptions?: string[]; Name?: string };
  const os = info.OperatingSystem ?? "";
  if (/docker desktop/i.test(os) || /orbstack|colima/i.test(os) || (process.platform === "darwin" && !remote))
    return { kind: "desktop", detail: os || "Docker Desktop" };
  if ((info.SecurityOptions ?? []).some((o) => o.includes("rootless"))) return { kind: "rootless", detail: `${os}, rootless` };
  if (remote) return { kind: "remote", detail: `${os} at ${ep.host}` };
  return { kind: "native", detail: os };
}
