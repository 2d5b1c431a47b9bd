/**
 * One port, several proxy threads. On Linux the proxy runs its request path on more than one
 * thread, each with its own listener on the same port (SO_REUSEPORT; the kernel spreads the
 * connections). reusePort alone would let a second daemon — or any process of the same user —
 * bind that port too and take part of the traffic (docs/wire.md, "Runtime traps"), so a port is claimed in three
 * steps: an exclusive bind proves it free (a held port refuses it, reusePort or not); the
 * threads bind it with reusePort; the kernel's table of listening sockets must then show ours
 * and no others on that address and port. A later daemon's exclusive probe fails on a port we
 * hold, so it moves on.
 */
import { readFileSync } from "node:fs";

/** How many threads serve the proxy: two where the kernel balances a shared port, else one. */
export function threadCount(env: Record<string, string | undefined> = process.env): number {
  const asked = Number(env.LAZY_PROXY_THREADS);
  if (Number.isInteger(asked) && asked >= 1 && asked <= 8) return process.platform === "linux" ? asked : 1;
  return process.platform === "linux" && navigator.hardwareConcurrency >= 2 ? 2 : 1;
}

/**
 * Whether `port` on `host` is free right now: an exclusive bind (no reusePort) succeeds only
 * when no socket holds it. Returns the port bound (the kernel's pick for 0), or null when held.
 */
export function probe(host: string, port: number): number | null {
  try {
    const l = Bun.listen({ hostname: host, port, socket: { data() {} } });
    const got = l.port;
    l.stop(true);
    return got;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE" || /in use/i.test(String((e as Error).message))) return null;
    throw e;
  }
}

/** Listening TCP sockets on exactly `host`:`port`, from /proc/net/tcp and tcp6 (Linux). */
export function listeners(host: string, port: number, read: (path: string) => string = (p) => readFileSync(p, "utf8")): number {
  const want = procAddress(host);
  const portHex = port.toString(16).toUpperCase().padStart(4, "0");
  let n = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = read(file);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      // sl local_address rem_address st ...; st 0A is LISTEN
      if (f.length < 4 || f[3] !== "0A") continue;
      const [addr, p] = f[1]!.split(":");
      if (p === portHex && addr === want) n++;
    }
  }
  return n;
}

/** An address as /proc/net/tcp{,6} writes it: 32-bit words in host (little-endian) byte order. */
export function procAddress(host: string): string {
  const h = host.replace(/^\[|\]$/g, "");
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return word(h.split(".").map(Number));
  const bytes = ipv6Bytes(h);
  let out = "";
  for (let i = 0; i < 16; i += 4) out += word(bytes.slice(i, i + 4));
  return out;
}

function word(b: number[]): string {
  return [b[3], b[2], b[1], b[0]].map((x) => (x ?? 0).toString(16).toUpperCase().padStart(2, "0")).join("");
}

function ipv6Bytes(h: string): number[] {
  const [head, tail] = h.includes("::") ? h.split("::") : [h, undefined];
  const groups = (s: string | undefined) => (s ? s.split(":").filter(Boolean) : []);
  const a = groups(head);
  const b = groups(tail);
  const all = tail === undefined ? a : [...a, ...Array(8 - a.length - b.length).fill("0"), ...b];
  return all.flatMap((g) => {
    const v = parseInt(g, 16) || 0;
    return [v >> 8, v & 0xff];
  });
}
