/**
 * lazy doctor's checks of the host's network setup, before the first build: the CA bundle
 * builds and containers inherit (each file parses; which files), the proxy in use (named
 * without its password; reachable), and the base image (on the engine, or pullable). Kept out
 * of doctor.ts: one concern, one file.
 */
import { connect } from "node:net";
import { resolve } from "node:path";
import { type Config, profileNames, resolveProfile } from "../config";
import { BaseImage, type Engine } from "../containers";
import { HostNet } from "../network";
import { decideWay } from "../proxy";
import { readRegular } from "../util/bounded-read";

export interface NetworkFinding {
  check: string;
  ok: boolean;
  blocking: boolean;
  summary: string;
  remedy?: string;
}

/** `ep`: the engine when it answers (the base image is asked of it), else null. */
export async function networkFindings(root: string, config: Config, ep: Engine.Endpoint | null): Promise<NetworkFinding[]> {
  const out: NetworkFinding[] = [];
  if (!config.container.inherit_network_env)
    out.push({
      check: "network",
      ok: true,
      blocking: false,
      summary: "[container] inherit_network_env = false: builds and task containers get none of the host's CA certificates or proxy",
    });
  else {
    try {
      const host = HostNet.read();
      out.push({
        check: "network",
        ok: true,
        blocking: false,
        summary: host.ca
          ? `CA bundle for builds and containers: ${host.ca.sources.join(", ")}`
          : "no extra CA certificates on this host (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, /usr/local/share/ca-certificates)",
      });
    } catch (e) {
      out.push({ check: "network", ok: false, blocking: true, summary: (e as Error).message, remedy: "fix or unset the file named" });
    }
    const url = process.env.HTTPS_PROXY || process.env.https_proxy || process.env.HTTP_PROXY || process.env.http_proxy;
    const via = url ? HostNet.proxyFor("example.invalid", { ...process.env, NO_PROXY: "", no_proxy: "" }) : null;
    if (url && !via)
      out.push({
        check: "network",
        ok: false,
        blocking: false,
        summary: `the host's proxy ${HostNet.shown(url)} is not an http:// URL lazy can chain behind`,
        remedy: "give HTTPS_PROXY as http://host:port",
      });
    if (via) {
      const error = await reach(via.host, via.port);
      out.push(
        error
          ? {
              check: "network",
              ok: false,
              blocking: true,
              summary: `the host's proxy ${via.shown} does not answer (${error})`,
              remedy: "check HTTPS_PROXY, then lazy daemon restart from that shell",
            }
          : {
              check: "network",
              ok: true,
              blocking: false,
              summary: `proxy in use: ${via.shown} (${config.container.build_network === "host" ? "builds on the host's network; task containers" : "image builds and task containers"} reach it through lazy's egress proxy)`,
            },
      );
    }
  }
  const base = baseOf(root, config);
  if (base && ep) {
    const p = await BaseImage.presence(ep, base);
    out.push(
      p.state === "unreachable"
        ? {
            check: "image",
            ok: false,
            blocking: true,
            summary: `the base image ${base} is not on the engine and cannot be pulled: ${p.error}`,
            remedy:
              "set [container] base to an image the engine has (docker images), or give Docker a registry mirror (registry-mirrors in /etc/docker/daemon.json) or its own HTTPS_PROXY",
          }
        : {
            check: "image",
            ok: true,
            blocking: false,
            summary: `base image ${base}: ${p.state === "present" ? "on the engine" : "pullable"}`,
          },
    );
  }
  return out;
}

/**
 * Each upstream lazy.toml names (an [proxy.upstreams] override, a profile's endpoint, a
 * fallback) that is plain http:// and that this environment's proxy would carry: the model
 * proxy refuses every request to it (proxy/upstream/way.ts), so doctor says so before a turn does.
 */
export function upstreamWayFindings(config: Config, env: Record<string, string | undefined> = process.env): NetworkFinding[] {
  const named: [string, string][] = [
    ...Object.entries(config.proxy.upstreams).flatMap(([k, v]): [string, string][] => (v ? [[`[proxy.upstreams] ${k}`, v]] : [])),
    ...profileNames(config).flatMap((n): [string, string][] => {
      const e = resolveProfile(config, n).endpoint;
      return e ? [[`profile ${n}`, e]] : [];
    }),
    ...config.proxy.fallback.map((f): [string, string] => [`fallback ${f.name}`, f.endpoint]),
  ];
  const out: NetworkFinding[] = [];
  for (const [who, url] of named) {
    let origin: string;
    try {
      origin = new URL(url).origin;
    } catch {
      continue;
    }
    const way = decideWay(origin, env);
    if (way.via === "refused")
      out.push({
        check: "proxy",
        ok: false,
        blocking: false,
        summary: `${who} (${origin}) is plain http:// and would go through the host's proxy ${way.proxy}: lazy's proxy refuses every request to it rather than let that proxy read the credential, prompt and code`,
        remedy: `use an https:// endpoint, or, if ${way.host.replace(/:\d+$/, "")} is reachable directly, add it to NO_PROXY, then lazy daemon restart from that shell`,
      });
  }
  return out;
}

/** The image the first build starts FROM: [container] image itself, the project Dockerfile's first FROM, or lazy's default's base. */
function baseOf(root: string, config: Config): string | null {
  const c = config.container;
  if (c.image) return c.image;
  if (c.dockerfile) {
    const read = readRegular(resolve(root, c.dockerfile), 1024 * 1024);
    if (!("text" in read)) return null;
    const from = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)/im.exec(read.text)?.[1];
    return from && !from.includes("$") ? from : null;
  }
  return c.base;
}

function reach(host: string, port: number, timeoutMs = 3000): Promise<string | null> {
  return new Promise((done) => {
    const s = connect({ host, port });
    const timer = setTimeout(() => {
      s.destroy();
      done(`no answer within ${timeoutMs / 1000} s`);
    }, timeoutMs);
    s.on("connect", () => {
      clearTimeout(timer);
      s.end();
      done(null);
    });
    s.on("error", (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      done(e.code ?? e.message);
    });
  });
}
