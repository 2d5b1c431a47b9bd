/**
 * Where a daemon listens: where the one before it did. After a crash its record (daemon.json)
 * outlives a kill -9, and agents, host sessions and open dashboards were given those ports;
 * after a clean stop or a restart, ports.json (written at each start, never removed) keeps the
 * ports the project last used, so a dashboard tab left open works again and two projects that
 * probed upward from one configured port do not swap ports by starting in another order.
 * The configured port still decides when it changed since: a port remembered is used only
 * while it lies in the range the configured one probes (the first 50 above it), and a port
 * taken meanwhile probes upward as before. The gateway ports containers reach are the proxy's
 * to keep (proxy/index.ts listenFor).
 */
import { readOwn, writeFileAtomic } from "../util/files";
import * as State from "./state";

type Address = { host: string; port: number };

const isAddress = (v: unknown): v is Address =>
  !!v &&
  typeof (v as Address).host === "string" &&
  Number.isInteger((v as Address).port) &&
  (v as Address).port > 0 &&
  (v as Address).port < 65536;

/** The ports the project's daemon last listened on (ports.json), whoever stopped it and how. */
export function last(p: State.StatePaths): { api?: Address; proxy?: Address } {
  const r = readOwn(p.ports);
  if (!r || !("text" in r)) return {}; // none yet, or not a file this user wrote: nothing to follow
  try {
    const v = JSON.parse(r.text) as { api?: unknown; proxy?: unknown };
    return { ...(isAddress(v.api) ? { api: v.api } : {}), ...(isAddress(v.proxy) ? { proxy: v.proxy } : {}) };
  } catch {
    return {};
  }
}

/** Remember where this daemon listens, for the next one. */
export function remember(p: State.StatePaths, ports: { api: Address; proxy: Address | null }): void {
  writeFileAtomic(p.ports, JSON.stringify({ api: ports.api, ...(ports.proxy ? { proxy: ports.proxy } : {}) }));
}

/** The ports of the daemon before this one, if it left its record (it died without stopping). */
export function before(p: State.StatePaths): { api?: { host: string; port: number }; proxy?: { host: string; port: number } } | undefined {
  let r: State.DaemonRecord | undefined;
  try {
    r = State.readRecord(p);
  } catch {
    return undefined; // not a record this user wrote: nothing in it to follow
  }
  if (!r || r.pid === process.pid) return undefined;
  return { api: r.api, proxy: r.proxy ?? undefined };
}

/** The port to start from: the one before, when it was on this address and in the configured range. */
export function prefer(was: { host: string; port: number } | undefined, host: string, configured: number): number {
  if (!was || was.host !== host || configured === 0) return configured;
  return was.port >= configured && was.port < configured + 50 ? was.port : configured;
}
