/**
 * NO_PROXY as curl and Bun's fetch read it, so that lazy's egress proxy (which chains behind the
 * host's proxy itself) and lazy's own model requests (Bun's fetch when a proxy is set) decide
 * alike which hosts skip the host's proxy. One entry list, commas or whitespace between entries,
 * case-insensitive:
 *
 * - `*` alone: every host;
 * - `example.com`, `.example.com`, `*.example.com`: that name and every name below it (never
 *   `notexample.com`; curl's reading of the leading dot, where Go's skips the name itself);
 * - `10.1.2.3`, `::1`, `[::1]`: that address, compared as an address (`0:0::1` is `::1`);
 * - `10.0.0.0/8`, `fd00::/8`: every address in the block (an IPv4 address written as
 *   `::ffff:10.1.2.3` too); an address only, a name is never resolved to match;
 * - any of these with `:port` (`example.com:8080`, `[::1]:8080`, `10.0.0.1:80`): that port only.
 *
 * An entry that is none of these (`10.0.0.0/40`, an empty one) matches nothing. No entry
 * matches loopback by itself: unlike Go, a proxy set for loopback is used (as curl and Bun do).
 *
 * So lazy says it itself, one rule for every client of its own: loopback is never sent through
 * the host's proxy (which cannot reach this host's loopback, and would get whatever credential
 * the request carries). A harness on the host gets `LOOPBACK` added to its NO_PROXY
 * (`withLoopback`); the model proxy's upstream requests skip the proxy for `isLoopback` hosts
 * and this host's own addresses (proxy/upstream/way.ts).
 */
import { isIP } from "node:net";

/** What a harness's NO_PROXY gets: the names its clients use for lazy's proxy on loopback. */
export const LOOPBACK = ["127.0.0.1", "localhost", "::1"] as const;

/** Whether `host` (a name or an address, IPv6 with or without brackets) is loopback. */
export function isLoopback(host: string): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  const ip = bytesOf(h);
  if (!ip) return false;
  if (ip.length === 4) return ip[0] === 127;
  if (ip.subarray(0, 15).every((x) => x === 0) && ip[15] === 1) return true; // ::1
  return ip.subarray(0, 10).every((x) => x === 0) && ip[10] === 0xff && ip[11] === 0xff && ip[12] === 127; // ::ffff:127.x
}

const PROXY_VARS = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"];

/** An environment behind a proxy with `LOOPBACK` added to its NO_PROXY (both spellings); without one, as it was. */
export function withLoopback(env: Record<string, string>): Record<string, string> {
  if (!PROXY_VARS.some((k) => env[k])) return env;
  const list = listOf(env)
    .split(/[,\s]+/)
    .filter(Boolean);
  const no = [...list, ...LOOPBACK.filter((x) => !list.includes(x))].join(",");
  return { ...env, NO_PROXY: no, no_proxy: no };
}

/** The host's NO_PROXY list: `no_proxy` first, `NO_PROXY` when that is unset or empty (curl, Bun). */
export function listOf(env: Record<string, string | undefined>): string {
  return env.no_proxy || env.NO_PROXY || "";
}

/** Whether `list` says `host:port` goes direct, not through the host's proxy. */
export function bypass(host: string, port: number, list: string): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  const ip = bytesOf(h);
  for (const raw of list.split(/[,\s]+/)) {
    const e = entry(raw.trim().toLowerCase());
    if (!e) continue;
    if (e.kind === "all") return true;
    if (e.port !== undefined && e.port !== port) continue;
    if (e.kind === "name" ? !ip && (h === e.name || h.endsWith(`.${e.name}`)) : ip && inBlock(ip, e.bytes, e.bits)) return true;
  }
  return false;
}

type Entry =
  | { kind: "all" }
  | { kind: "name"; name: string; port?: number }
  | { kind: "block"; bytes: Uint8Array; bits: number; port?: number };

function entry(s: string): Entry | null {
  if (!s) return null;
  if (s === "*") return { kind: "all" };
  let port: number | undefined;
  let rest = s;
  // "[v6]" or "[v6]:port"; "host:port" only when there is one colon (a bare v6 has several).
  const bracket = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(rest);
  if (bracket) {
    rest = bracket[1]!;
    if (bracket[2] !== undefined) port = Number(bracket[2]);
  } else {
    const m = /^([^:]+):(\d{1,5})$/.exec(rest);
    if (m) {
      rest = m[1]!;
      port = Number(m[2]);
    }
  }
  if (port !== undefined && (port < 1 || port > 65535)) return null;
  const cidr = /^(.+)\/(\d{1,3})$/.exec(rest);
  if (cidr) {
    const bytes = bytesOf(cidr[1]!);
    const bits = Number(cidr[2]);
    if (!bytes || bits > bytes.length * 8) return null;
    return { kind: "block", bytes, bits, port };
  }
  const bytes = bytesOf(rest);
  if (bytes) return { kind: "block", bytes, bits: bytes.length * 8, port };
  const name = rest.replace(/^\*?\./, "").replace(/\.$/, "");
  if (!name || name.includes("*") || name.includes("/")) return null;
  return { kind: "name", name, port };
}

/** An address as its bytes (4 or 16), or null for a name. */
function bytesOf(s: string): Uint8Array | null {
  const v = isIP(s);
  if (v === 4) return Uint8Array.from(s.split(".").map(Number));
  if (v !== 6) return null;
  // The last group may be an IPv4 address (::ffff:10.1.2.3).
  let text = s.replace(/%.*$/, "");
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const b = v4[1]!.split(".").map(Number);
    text = `${text.slice(0, -v4[1]!.length)}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g: string, i: number) => {
    const n = Number.parseInt(g, 16);
    out[2 * i] = n >> 8;
    out[2 * i + 1] = n & 0xff;
  });
  return out;
}

/** Whether `ip` lies in the block; an IPv4 block also holds the IPv4-mapped IPv6 addresses. */
function inBlock(ip: Uint8Array, net: Uint8Array, bits: number): boolean {
  let a = ip;
  if (net.length === 4 && ip.length === 16) {
    if (!ip.subarray(0, 10).every((x) => x === 0) || ip[10] !== 0xff || ip[11] !== 0xff) return false;
    a = ip.subarray(12);
  }
  if (a.length !== net.length) return false;
  for (let i = 0; i < bits; i += 8) {
    const take = Math.min(8, bits - i);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((a[i / 8]! & mask) !== (net[i / 8]! & mask)) return false;
  }
  return true;
}
