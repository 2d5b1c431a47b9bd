/**
 * The address range lazy takes its project networks from. Docker's default pools hold about
 * thirty bridge networks (172.17-31.0.0/16 and 192.168.0.0/16 in /20s), so a machine that has
 * seen thirty projects (a CI runner making a checkout per job) could launch nothing more. Each
 * project network is a /24 of 10.213.0.0/16 instead (256 at once; a network lives only while
 * its project has containers, and lazy daemon stop removes it), picked to overlap no other
 * Docker network and no network of this host: its addresses, and every route in its table,
 * those of bridges without a carrier included. Only when all are taken does Docker's own pool
 * decide, and its refusal is worded with the cause and the remedy (errors here, once).
 */
import { existsSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { LazyError } from "../util/errors";

export const RANGE = "10.213.0.0/16";
const BLOCKS = 256;

/** IPv4 dotted quad to a number; undefined when it is not one. */
function ip4(s: string): number | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((n) => n > 255)) return undefined;
  return ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!;
}

/** A CIDR as its first address and size; undefined for IPv6 or nonsense. */
function cidr(s: string): { start: number; size: number } | undefined {
  const [a, b] = s.split("/");
  const start = ip4(a ?? "");
  const bits = Number(b ?? "32");
  if (start === undefined || !Number.isInteger(bits) || bits < 0 || bits > 32) return undefined;
  const size = 2 ** (32 - bits);
  return { start: start - (start % size), size };
}

function overlap(a: { start: number; size: number }, b: { start: number; size: number }): boolean {
  return a.start < b.start + b.size && b.start < a.start + a.size;
}

/**
 * The project's /24s to try, in order: starting from one of its own (by name), so projects rarely
 * race for one. `host`: this host's own networks (hostNetworks), which no bridge may shadow.
 */
export function candidates(project: string, taken: string[], host: string[] = hostNetworks()): { subnet: string; gateway: string }[] {
  const used = [...taken, ...host].map(cidr).filter((c): c is { start: number; size: number } => !!c);
  let h = 0;
  for (const ch of project) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  const out: { subnet: string; gateway: string }[] = [];
  for (let i = 0; i < BLOCKS; i++) {
    const n = (h + i) % BLOCKS;
    const block = { start: cidr(RANGE)!.start + n * 256, size: 256 };
    if (used.some((u) => overlap(u, block))) continue;
    out.push({ subnet: `10.213.${n}.0/24`, gateway: `10.213.${n}.1` });
  }
  return out;
}

/**
 * This host's own IPv4 networks, never given to a project's bridge: its addresses, and on Linux
 * every route of its main table (a VPN's 10.x route, say). The routes matter most: the
 * interface list skips interfaces without a carrier, and a bridge with no container attached
 * has none — another Docker engine's, a VM's — while its route stays ("linkdown"). (An
 * interface set down by hand has neither: its block is free until it comes up.) A project
 * bridge on the same /24 as one of those left the host two routes to it; the host answered the
 * container's connection out of the other bridge, and the agent's first connection to lazy's
 * proxy hung until its harness gave up.
 */
export function hostNetworks(routes: RouteTable = readRoutes): string[] {
  const addresses = Object.values(networkInterfaces())
    .flat()
    .flatMap((a) => (a && a.family === "IPv4" && a.cidr ? [a.cidr] : []));
  return [...addresses, ...routesOf(tableOf(routes))];
}

/** Where the route table is read from: /proc/net/route, or a test's own text. */
type RouteTable = () => string;
const readRoutes: RouteTable = () => readFileSync("/proc/net/route", "utf8");
/** The table's text; empty where there is none (not Linux: the addresses are what there is). */
function tableOf(routes: RouteTable): string {
  try {
    return routes();
  } catch {
    return "";
  }
}

/**
 * The networks of /proc/net/route's lines ("Iface Destination Gateway Flags … Mask …", the
 * addresses in hex, in the machine's byte order: little-endian on every platform lazy ships
 * for). The default route (mask 0) is no network of the host's own.
 */
export function routesOf(table: string): string[] {
  return routeEntries(table).map((r) => r.cidr);
}

function routeEntries(table: string): { iface: string; cidr: string }[] {
  const out: { iface: string; cidr: string }[] = [];
  for (const line of table.split("\n").slice(1, 100_001)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8 || !/^[0-9A-Fa-f]{8}$/.test(f[1]!) || !/^[0-9A-Fa-f]{8}$/.test(f[7]!)) continue;
    const mask = Number.parseInt(f[7]!, 16);
    if (mask === 0) continue;
    const bits = (mask >>> 0).toString(2).replace(/0/g, "").length;
    out.push({ iface: f[0]!, cidr: `${quad(f[1]!)}/${bits}` });
  }
  return out;
}

/**
 * The routes of other interfaces that take addresses of `bridge`'s own ("iface cidr" each): as
 * specific as the bridge's route or more (a wider one, a VPN's 10.0.0.0/8, loses to it). A
 * project network made before lazy looked at routes, or another bridge made on its block since:
 * the host may answer the project's containers out of the other interface, and their
 * connections to lazy's proxy hang. Empty where there is no route table (not Linux) or the
 * bridge has no route.
 */
export function sharedWith(bridge: string, routes: RouteTable = readRoutes): string[] {
  const all = routeEntries(tableOf(routes));
  const own = all.filter((r) => r.iface === bridge).flatMap((r) => cidr(r.cidr) ?? []);
  return all
    .filter((r) => {
      const c = cidr(r.cidr)!;
      return r.iface !== bridge && own.some((o) => overlap(o, c) && c.size <= o.size);
    })
    .map((r) => `${r.iface} ${r.cidr}`);
}

/**
 * The IPv4 networks of this host's bridges (docker0, every Docker network's br-…, lazy's project
 * bridges, a VM host's virbr0): where other containers live. Read anew each time (a network may
 * have been made a moment ago); empty where there is no route table.
 */
export function bridgeNetworks(
  routes: RouteTable = readRoutes,
  isBridge: (iface: string) => boolean = (i) => existsSync(`/sys/class/net/${i}/bridge`),
): string[] {
  const seen = new Map<string, boolean>();
  return routeEntries(tableOf(routes))
    .filter((r) => {
      if (r.iface.includes("/") || r.iface.startsWith(".")) return false;
      if (!seen.has(r.iface)) seen.set(r.iface, isBridge(r.iface));
      return seen.get(r.iface)!;
    })
    .map((r) => r.cidr);
}

/** A little-endian hex word of /proc/net/route as a dotted quad. */
const quad = (hex: string): string => {
  const n = Number.parseInt(hex, 16);
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255].join(".");
};

/** The engine had no address left for the project's network: why, and what to do. */
export function exhausted(name: string, message: string): LazyError {
  return new LazyError(
    "launch_refused",
    `Docker could not make the project's network ${name}: it has no free address range left (${message}). lazy takes a /24 of ${RANGE} for each project and found none free, so other networks hold them and Docker's own pools: list them with docker network ls, remove the ones no longer used (docker network prune removes every network without a container), then launch again.`,
  );
}

/** Docker's words for "no address range left" and "that range is taken". */
export const NO_POOL = /could not find an available, non-overlapping|no available network|address pools have been fully subnetted/i;
export const OVERLAP = /overlap/i;
