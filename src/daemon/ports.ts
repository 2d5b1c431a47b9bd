/**
 * Where a daemon that comes back after a crash listens: where the one before it did. Its record
 * (daemon.json) outlives a kill -9, and agents, host sessions and open dashboards were given
 * those ports. The configured port still decides when it changed since: a port remembered is
 * used only while it lies in the range the configured one probes (the first 50 above it).
 * The gateway ports containers reach are the proxy's to keep (proxy/index.ts listenFor).
 */
import * as State from "./state";

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
