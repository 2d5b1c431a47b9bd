/**
 * Whether the egress proxy may connect a container to `host:port`, from `[container] network`
 * and `allow` (config/allow.ts has the entry grammar), and then to which address: the name is
 * resolved here, once, and the address checked before it is dialed, so a name cannot lead to
 * this host's own services or a metadata address unless the user named that very host.
 *
 * - "allowlist": only hosts an entry allows (the built-in list unless allow_defaults = false,
 *   plus `allow`).
 * - "observe": any host, but this host's own addresses, its container networks and link-local
 *   ones only when an entry of `allow` names them.
 * This host's own addresses (loopback, every interface's, so every project's gateway) and
 * link-local ones (cloud metadata) are reached only through an entry in `allow` that names
 * the host exactly (not a wildcard, not the built-in list); link-local only with
 * `allow_metadata` as well. So are the networks of this host's bridges (docker0, other Docker
 * networks, other projects'): the fence keeps a container off them directly, and the egress
 * proxy, which dials from the host, must not take it there either ("observe" did).
 * Behind the host's own proxy, a name this host cannot resolve goes to that proxy by name: a
 * company network's DNS often answers only its own names, and the proxy resolves the rest.
 */
import { lookup } from "node:dns/promises";
import { type AllowEntry, allows, type Config, DEFAULT_ALLOW, hostOf, parseAllow } from "../config";
import { Subnets } from "../network";
import * as NoProxy from "../util/no-proxy";
import { isHostOwn } from "../util/own-address";

export { isHostOwn };

export type Decision =
  | { ok: true; address: string; family: 4 | 6; byName?: true }
  | { ok: false; status: number; why: string; remedy: string };

/** How a name is resolved (node:dns's lookup; a test's own). */
export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const systemLookup: Lookup = (host) => lookup(host, { all: true });

export interface Resolving {
  /**
   * The connection goes through the host's own proxy, which resolves the name on its side: a
   * name this host cannot resolve (a company network whose DNS answers only its own names) goes
   * to it by name. A name that does resolve is still checked against this host's addresses (a
   * proxy on this host's loopback resolves as it does).
   */
  proxied?: boolean;
  /** How long resolving may take: refused after it, or by name when proxied. */
  timeoutMs: number;
  lookup?: Lookup;
}

export interface Rules {
  mode: Config["container"]["network"];
  defaults: AllowEntry[];
  own: AllowEntry[];
  allowMetadata: boolean;
}

const parsed = (xs: readonly string[]) => xs.map(parseAllow).filter((e): e is AllowEntry => !("error" in e));
const DEFAULTS = parsed(DEFAULT_ALLOW);

export function rulesOf(config: Config): Rules {
  const c = config.container;
  return { mode: c.network, defaults: c.allow_defaults ? DEFAULTS : [], own: parsed(c.allow), allowMetadata: c.allow_metadata };
}

const remedyFor = (host: string, port: number) =>
  `add "${port === 443 || port === 80 ? host : `${host}:${port}`}" to allow under [container] in lazy.toml`;

function isLinkLocal(a: string): boolean {
  return /^169\.254\./.test(a) || /^fe[89ab][0-9a-f]:/i.test(a) || /^fd00:ec2::254$/i.test(a);
}

/** Decide, resolving the name when it is allowed. */
export async function decide(rules: Rules, rawHost: string, port: number, how: Resolving = { timeoutMs: 10_000 }): Promise<Decision> {
  const host = hostOf(rawHost);
  if (!host || port < 1 || port > 65535)
    return {
      ok: false,
      status: 400,
      why: `${JSON.stringify(rawHost)}:${port} is not a host name and port`,
      remedy: "name a DNS host or IPv4 address",
    };
  const exact = rules.own.some((e) => !e.wildcard && allows(e, host, port));
  const listed = exact || rules.own.some((e) => allows(e, host, port)) || rules.defaults.some((e) => allows(e, host, port));
  if (rules.mode !== "observe" && !listed)
    return { ok: false, status: 403, why: `${host}:${port} is not in [container] allow`, remedy: remedyFor(host, port) };
  let addrs: { address: string; family: number }[];
  let timer: Timer | undefined;
  try {
    addrs = await Promise.race([
      (how.lookup ?? systemLookup)(host),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(Object.assign(new Error("timeout"), { code: "TIMEOUT" })), how.timeoutMs);
      }),
    ]);
  } catch (e) {
    if (how.proxied) return { ok: true, address: host, family: 4, byName: true };
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "TIMEOUT")
      return {
        ok: false,
        status: 504,
        why: `${host} did not resolve within ${how.timeoutMs / 1000} s`,
        remedy: "check the name, or try again",
      };
    return { ok: false, status: 502, why: `${host} does not resolve (${code ?? "lookup failed"})`, remedy: "check the name" };
  } finally {
    clearTimeout(timer);
  }
  // This host's container networks, read once a decision (only when an address is IPv4).
  let bridges: string | undefined;
  const onBridge = (a: string) => {
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(a)) return false;
    bridges ??= Subnets.bridgeNetworks().join(",");
    return bridges !== "" && NoProxy.bypass(a, 0, bridges);
  };
  const usable = addrs.filter((a) => {
    if (isLinkLocal(a.address)) return exact && rules.allowMetadata;
    if (isHostOwn(a.address) || onBridge(a.address)) return exact;
    return true;
  });
  const pick = usable.find((a) => a.family === 4) ?? usable[0];
  if (!pick)
    return {
      ok: false,
      status: 403,
      why: `${host} resolves to ${addrs.map((a) => a.address).join(", ")}: this host's own, a container network's or a link-local address`,
      remedy: `name the host exactly in [container] allow in lazy.toml to reach it${addrs.some((a) => isLinkLocal(a.address)) ? " (and set allow_metadata = true for a link-local one)" : ""}`,
    };
  return { ok: true, address: pick.address, family: pick.family === 6 ? 6 : 4 };
}
