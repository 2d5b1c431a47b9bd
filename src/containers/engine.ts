/**
 * Which Docker engine lazy talks to: DOCKER_HOST, else the active docker context, else the
 * default socket. docker-modem ignores contexts (colima, OrbStack), so lazy resolves them.
 * dockerode appears in this folder only, and loads on first use: it costs ~0.3 s to import,
 * which every CLI command would otherwise pay. An ssh:// engine goes through the system's ssh
 * (ssh-tunnel.ts), never dockerode's own ssh transport.
 */

import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import type { EngineKind } from "../network";
import { LazyError } from "../util/errors";
import * as SshTunnel from "./ssh-tunnel";

export interface Endpoint {
  /** unix:///var/run/docker.sock, tcp://host:2376, ... */
  host: string;
  /** Where the choice came from, for doctor. */
  source: "DOCKER_HOST" | `context ${string}` | "default socket";
  /** A context's TLS: its folder of ca.pem, cert.pem and key.pem (any may be absent), and whether it says not to verify. */
  tls?: { dir: string; skipVerify: boolean };
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
    // The docker CLI's context store: meta/<sha256>/meta.json, and its TLS files in tls/<sha256>/docker/.
    const id = createHash("sha256").update(context).digest("hex");
    try {
      const docker = (
        JSON.parse(readFileSync(join(dockerDir, "contexts", "meta", id, "meta.json"), "utf8")) as {
          Endpoints?: { docker?: { Host?: string; SkipTLSVerify?: boolean } };
        }
      ).Endpoints?.docker;
      if (docker?.Host) {
        const dir = join(dockerDir, "contexts", "tls", id, "docker");
        const tls = existsSync(dir) || docker.SkipTLSVerify ? { dir, skipVerify: docker.SkipTLSVerify === true } : undefined;
        return { host: docker.Host, source: `context ${context}`, ...(tls ? { tls } : {}) };
      }
    } catch {}
  }
  const candidates = ["/var/run/docker.sock", join(homedir(), ".docker/run/docker.sock")];
  const sock = candidates.find((c) => existsSync(c)) ?? candidates[0]!;
  return { host: `unix://${sock}`, source: "default socket" };
}

export async function client(ep: Endpoint, env: Record<string, string | undefined> = process.env): Promise<Docker> {
  const { default: Docker } = await import("dockerode");
  if (ep.host.startsWith("unix://")) return new Docker({ socketPath: ep.host.slice("unix://".length) });
  // dockerode's ssh transport takes any host key it is shown: lazy holds an OpenSSH tunnel
  // (ssh-tunnel.ts, strict host keys) and talks to its local socket. docker-modem fills its
  // options from process.env.DOCKER_HOST first, and a host (or the protocol "ssh") it finds
  // there wins over socketPath: each is named here to undo that.
  if (ep.host.startsWith("ssh://"))
    return new Docker({
      socketPath: await SshTunnel.socketFor(ep.host, ep.source),
      host: undefined,
      port: undefined,
      protocol: "http",
      ca: undefined,
      cert: undefined,
      key: undefined,
    });
  if (!ep.host.startsWith("tcp://"))
    throw new LazyError("launch_refused", `${ep.host} (${ep.source}) is not a Docker address lazy knows (unix://, tcp://, ssh://).`);
  const u = new URL(ep.host.replace(/^tcp:/, "http:"));
  const https = (file: (name: string) => Buffer | undefined) =>
    new Docker({
      host: u.hostname,
      port: Number(u.port || 2376),
      protocol: "https",
      ca: file("ca.pem"),
      cert: file("cert.pem"),
      key: file("key.pem"),
    });
  // A context's TLS, as `docker context create --docker host=…,ca=…,cert=…,key=…` stored it.
  // An engine gets the worktree and runs the agent: lazy never talks to one it cannot verify.
  if (ep.tls) {
    if (ep.tls.skipVerify)
      throw new LazyError(
        "launch_refused",
        `The docker context behind ${ep.host} (${ep.source}) says not to verify the engine's certificate (skip-tls-verify), and lazy ships worktrees to it: give the context the engine's CA (docker context update --docker "host=${ep.host},ca=…,cert=…,key=…").`,
      );
    const dir = ep.tls.dir;
    return https((n) => (existsSync(join(dir, n)) ? readFileSync(join(dir, n)) : undefined));
  }
  // DOCKER_TLS_VERIFY as the docker CLI reads it: the engine's certificate checked against ca.pem.
  if (ep.source === "DOCKER_HOST" && env.DOCKER_TLS_VERIFY && env.DOCKER_TLS_VERIFY !== "0") {
    const dir = env.DOCKER_CERT_PATH ?? join(homedir(), ".docker");
    return https((n) => readFileSync(join(dir, n)));
  }
  return new Docker({ host: u.hostname, port: Number(u.port || 2375), protocol: "http" });
}

/** Whether the engine runs elsewhere (its containers cannot see this host's files or loopback). */
export const isRemote = (ep: Endpoint) => !ep.host.startsWith("unix://") && !ep.host.startsWith("npipe://");

/** Whether lazy reaches the engine through an ssh tunnel of its own (ssh-tunnel.ts). */
export const isSsh = (ep: Endpoint) => ep.host.startsWith("ssh://");

/** An engine that did not answer, worded once with the remedy (the launch, lazy doctor). */
export function unreachable(ep: Endpoint, error: string): string {
  return isRemote(ep)
    ? `The Docker engine at ${ep.host} (from ${ep.source}) does not answer (${error}): start it or fix the address, or unset DOCKER_HOST to use this machine's engine. No task was touched.`
    : `Cannot reach the Docker engine at ${ep.host} (${error}): start Docker (Linux: sudo systemctl start docker, or dockerd); run lazy doctor.`;
}

/** `p`, or an error saying the engine did not answer within `ms` (the timer does not outlive it). */
export async function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`}`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function ping(
  ep: Endpoint,
  timeoutMs = 3000,
): Promise<{ ok: true; version: string; os: string } | { ok: false; error: string }> {
  try {
    const d = await client(ep);
    const v = (await bounded(d.version(), timeoutMs)) as { Version: string; Os: string };
    return { ok: true, version: v.Version, os: v.Os };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

export type { EngineKind };

/**
 * Where the engine runs, which decides how containers reach the proxy and whether a
 * placeholder can be pinned to its container's address (only where the container's gateway
 * is an address of this host: native Linux Docker).
 */
export async function kind(ep: Endpoint, docker?: Docker): Promise<{ kind: EngineKind; detail: string }> {
  const remote = isRemote(ep);
  const d = docker ?? (await client(ep));
  const info = (await bounded(d.info(), 5000)) as { OperatingSystem?: string; SecurityOptions?: string[]; Name?: string };
  const os = info.OperatingSystem ?? "";
  if (/docker desktop/i.test(os) || /orbstack|colima/i.test(os) || (process.platform === "darwin" && !remote))
    return { kind: "desktop", detail: os || "Docker Desktop" };
  if ((info.SecurityOptions ?? []).some((o) => o.includes("rootless"))) return { kind: "rootless", detail: `${os}, rootless` };
  if (remote) return { kind: "remote", detail: `${os} at ${ep.host}` };
  return { kind: "native", detail: os };
}
