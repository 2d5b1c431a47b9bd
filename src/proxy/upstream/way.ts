/**
 * Which way lazy's requests to an upstream origin go, decided once per origin in each proxy
 * thread (the environment is read as the thread starts): directly, through the host's proxy
 * (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY as util/no-proxy.ts reads them), or not at all.
 *
 * - Loopback and this host's own addresses always go direct, whatever the environment says: a
 *   company proxy cannot reach this host's loopback, and would get the real credential the
 *   request carries (Bun's fetch, like curl, sends loopback through a proxy NO_PROXY does not
 *   name). The same rule puts loopback in a host harness's NO_PROXY (util/no-proxy.ts).
 * - https:// through the proxy is a CONNECT tunnel: the proxy sees the host, never the request.
 * - plain http:// through the proxy would hand the proxy the whole request in clear text — the
 *   credential lazy swapped in, the agent's prompt and code: refused, every request to that
 *   origin, with the remedy (https, or NO_PROXY for a host reachable directly). Not only when a
 *   credential is set: the prompt and the code are no less private than the key.
 */
import { isIP } from "node:net";
import * as NoProxy from "../../util/no-proxy";
import { isHostOwn } from "../../util/own-address";

export type Way =
  /** `client`: lazy's own client can carry it (http or https); else fetch does, never through a proxy. */
  | { via: "direct"; client: boolean }
  | { via: "proxy"; proxy: string }
  /** `host`: the upstream's host[:port]; `proxy`: the host's proxy, named without its password. */
  | { via: "refused"; host: string; proxy: string };

/** The way to `origin` (scheme://host[:port]) under `env`. */
export function decide(origin: string, env: Record<string, string | undefined>): Way {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return { via: "direct", client: false }; // fetch says what is wrong with it
  }
  const tls = u.protocol === "https:";
  if (!tls && u.protocol !== "http:") return { via: "direct", client: false };
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (NoProxy.isLoopback(host) || (isIP(host) && isHostOwn(host))) return { via: "direct", client: true };
  const proxy = tls
    ? env.https_proxy || env.HTTPS_PROXY || env.all_proxy || env.ALL_PROXY
    : env.http_proxy || env.HTTP_PROXY || env.all_proxy || env.ALL_PROXY;
  if (!proxy) return { via: "direct", client: true };
  if (NoProxy.bypass(host, Number(u.port || (tls ? 443 : 80)), NoProxy.listOf(env))) return { via: "direct", client: true };
  if (tls) return { via: "proxy", proxy };
  return { via: "refused", host: u.host, proxy: shown(proxy) };
}

/** The sentence for a refused way: what would have happened and the two remedies. */
export function refusal(way: Extract<Way, { via: "refused" }>, who: string): string {
  return `lazy's proxy refused to send the request to ${who} (http://${way.host}): it is plain http:// and the daemon's environment (HTTP_PROXY) sends it through the host's proxy ${way.proxy}, which would read the credential, the prompt and the code in clear text. Use an https:// endpoint for it in lazy.toml, or, if ${way.host.replace(/:\d+$/, "")} is reachable directly, add it to NO_PROXY in the daemon's environment and run lazy daemon restart.`;
}

/** A proxy URL as said to people: never its password. */
function shown(url: string): string {
  try {
    const u = new URL(url.includes("://") ? url : `http://${url}`);
    return `${u.protocol}//${u.host}`;
  } catch {
    return "(unparsable URL)";
  }
}

const ways = new Map<string, Way>();

/** The way to `origin` in this thread, decided on its first request and kept. */
export function wayTo(origin: string): Way {
  let w = ways.get(origin);
  if (!w) {
    w = decide(origin, process.env);
    ways.set(origin, w);
  }
  return w;
}

/** The origin (scheme://host[:port]) of an absolute URL, as a string cut (no URL parse on the request path). */
export function originOf(url: string): string {
  const slash = url.indexOf("/", url.indexOf("//") + 2);
  return slash === -1 ? url : url.slice(0, slash);
}
