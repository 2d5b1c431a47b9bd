/**
 * Where the proxy's threads listen: one port per address, every thread on it (shared on Linux
 * by reusePort, after an exclusive probe bind proves it free and a count proves it ours alone),
 * the loopback address first, then each project network's gateway. The port containers were
 * given on a gateway is kept in gateway-ports.json, so a daemon that comes back listens there
 * again; a thread that restarts listens where the others do, or the proxy is failed.
 */
import { readFileSync } from "node:fs";
import { LazyError } from "../../util/errors";
import { writeFileAtomic } from "../../util/files";
import type { Logger } from "../../util/log";
import { listeners, probe } from "../listen";
import type { Call, Listening, Thread } from "../thread";

export class Ports {
  /** Every address listened on, so a restarted thread listens there again. */
  private listening = new Map<string, number>();

  constructor(
    /** Where containers were told the proxy is, per gateway (kept across restarts: listenFor). */
    private gatewayPorts: string,
    private threads: Thread[],
    private log: Logger,
    private lost: (why: string) => void,
  ) {}

  private all<T>(c: Call): Promise<T[]> {
    return Promise.all(this.threads.map((t) => t.call<T>(c)));
  }

  /** A restarted thread listens where the others do: on those ports or not at all (the addresses agents were given). */
  async rejoin(t: Thread): Promise<void> {
    for (const [host, port] of this.listening) {
      const r = await t
        .call<Listening>({ op: "listen", host, port, shared: this.threads.length > 1, exact: true })
        .catch((e: Error) => ({ address: null, error: e.message }));
      if (r.address) continue;
      const why = `a restarted thread could not listen on ${host}:${port} again: ${r.error}`;
      this.log.error(`lazy's proxy failed: ${why}`);
      this.lost(why);
    }
  }

  /**
   * Listen on `host`, at `port` or the first free one above it. One thread: an exclusive bind.
   * Several: a port proven free, bound by each with reusePort, and checked to be ours alone.
   */
  async listen(host: string, port: number): Promise<Listening> {
    if (this.threads.length === 1) {
      const r = await this.threads[0]!.call<Listening>({ op: "listen", host, port, shared: false });
      if (r.address) this.listened(host, r.address.port);
      return r;
    }
    let last = "no free port";
    for (let p = port, n = 0; n < 50 && p <= 65535; p++, n++) {
      let free: number | null;
      try {
        free = probe(host, p);
      } catch (e) {
        return { address: null, error: (e as Error).message };
      }
      if (free === null) continue;
      const rs = await this.all<Listening>({ op: "listen", host, port: free, shared: true });
      const ok = rs.every((r) => r.address);
      if (ok && listeners(host, free) === this.threads.length) {
        this.listened(host, free);
        return rs[0]!;
      }
      last = ok ? `another process also listens on ${host}:${free}` : (rs.find((r) => !r.address)?.error ?? "unknown");
      await this.all({ op: "unlisten", host });
      if (port === 0) p--; // the kernel picks again
    }
    return { address: null, error: `no port of its own on ${host} from ${port}: ${last}` };
  }

  /** Listen on exactly host:port, every thread, or not at all. */
  private async listenExact(host: string, port: number): Promise<Listening> {
    const shared = this.threads.length > 1;
    if (shared) {
      let free: number | null;
      try {
        free = probe(host, port);
      } catch (e) {
        return { address: null, error: (e as Error).message };
      }
      if (free !== port) return { address: null, error: `${host}:${port} is taken` };
    }
    const rs = await this.all<Listening>({ op: "listen", host, port, shared, exact: true });
    if (rs.every((r) => r.address) && (!shared || listeners(host, port) === this.threads.length)) {
      this.listened(host, port);
      return rs[0]!;
    }
    await this.all({ op: "unlisten", host });
    return { address: null, error: rs.find((r) => !r.address)?.error ?? `another process also listens on ${host}:${port}` };
  }

  /**
   * A daemon that comes back after a crash listens at once where containers reached the one
   * before (gateway-ports.json), before housekeeping has asked Docker anything: a turn in flight
   * retries within a second or two. An address gone with its network is passed over.
   */
  async relisten(preferred: number, skip: string | undefined): Promise<void> {
    let known: Record<string, number> = {};
    try {
      known = JSON.parse(readFileSync(this.gatewayPorts, "utf8"));
    } catch {}
    for (const [host, port] of Object.entries(known)) {
      if (typeof port !== "number" || this.listening.has(host) || host === skip) continue;
      if (!hostIsOurs(host)) continue;
      await this.listenFor(host, preferred).catch((e: Error) => this.log.error(e.message));
    }
  }

  private listened(host: string, port: number): void {
    this.listening.set(host, port);
    this.log.info(`proxy listening on ${host}:${port}${this.threads.length > 1 ? ` (${this.threads.length} threads)` : ""}`);
  }

  /**
   * Also listen on an address the project's containers can reach (on native Linux, the gateway
   * of the project's Docker network), preferring `preferred` (the loopback listener's port).
   */
  listenFor(host: string, preferred: number): Promise<{ host: string; port: number }> {
    const port = this.listening.get(host);
    if (port !== undefined) return Promise.resolve({ host, port });
    // Callers at once (a launch and one of lazy's own calls, housekeeping) share one try: two
    // would each probe and bind, and the one that lost would unlisten the address under the
    // other, which had already told containers (and the network fence) its port.
    let under = this.claiming.get(host);
    if (!under) {
      const mine: Promise<{ host: string; port: number }> = this.claim(host, preferred).finally(() => {
        // An unlisten meanwhile may have let a newer claim in: that one's entry stays.
        if (this.claiming.get(host) === mine) this.claiming.delete(host);
      });
      under = mine;
      this.claiming.set(host, under);
    }
    return under;
  }

  /** Addresses being claimed right now (listenFor), each by one try that every caller shares. */
  private claiming = new Map<string, Promise<{ host: string; port: number }>>();

  /** Per address, how many times it was unlistened: a claim under way when that changes is void. */
  private generations = new Map<string, number>();

  private async claim(host: string, preferred: number): Promise<{ host: string; port: number }> {
    const generation = this.generations.get(host) ?? 0;
    const address = await this.claimOnce(host, preferred);
    // The address went away while it was being claimed (its network removed): what the threads
    // bound there may have come after the unlisten, so it goes now, and nobody is told the port.
    if ((this.generations.get(host) ?? 0) !== generation) {
      this.listening.delete(host);
      await this.all({ op: "unlisten", host }).catch(() => {});
      throw new LazyError(
        "proxy_unavailable",
        `The project's network at ${host} was removed while lazy's proxy began to listen there; launch again.`,
      );
    }
    return address;
  }

  private async claimOnce(host: string, preferred: number): Promise<{ host: string; port: number }> {
    // The port running containers were given, if a daemon before this one listened here: the
    // loopback port may have gone to another process meanwhile, and the network fence drops
    // any other port (network/fence.ts).
    let known: Record<string, number> = {};
    try {
      known = JSON.parse(readFileSync(this.gatewayPorts, "utf8"));
    } catch {}
    const before = known[host];
    // Containers were given this port (a daemon before this one listened here): there or not at
    // all. Another process holding it meanwhile would otherwise answer them in lazy's name.
    if (typeof before === "number") {
      const r = await this.listenExact(host, before);
      if (r.address) return r.address;
      const why = `port ${before} on ${host}, where this project's containers reach lazy's proxy, is held by another process (${r.error}); lazy will not serve them elsewhere while something else may answer there in its name. Find it (ss -ltnp 'sport = :${before}'), stop it, then run lazy daemon restart`;
      // Status and doctor say so, and nothing launches onto that address meanwhile.
      this.lost(why);
      throw new LazyError("proxy_unavailable", `${why[0]!.toUpperCase()}${why.slice(1)}.`);
    }
    const r = await this.listen(host, preferred);
    if (r.address && r.address.port !== before)
      try {
        writeFileAtomic(this.gatewayPorts, JSON.stringify({ ...known, [host]: r.address.port }));
      } catch (e) {
        this.log.warn(`could not record the proxy's port on ${host}: ${(e as Error).message}`);
      }
    if (!r.address)
      throw new LazyError(
        "proxy_unavailable",
        `lazy's proxy could not listen on ${host} for the project's containers (${r.error}); run lazy doctor.`,
      );
    return r.address;
  }

  /** Stop listening on an address that is going away (the project's network was removed). */
  unlisten(host: string): void {
    this.listening.delete(host);
    this.claiming.delete(host);
    this.generations.set(host, (this.generations.get(host) ?? 0) + 1);
    void this.all({ op: "unlisten", host }).catch(() => {});
  }
}

/** Whether an address is this host's (a network's gateway still up): only then can port 0 be bound there. */
function hostIsOurs(host: string): boolean {
  try {
    return probe(host, 0) !== null;
  } catch {
    return false;
  }
}
