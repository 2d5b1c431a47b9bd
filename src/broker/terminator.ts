/**
 * Where a brokered CONNECT's TLS ends: a Bun.serve on loopback with one certificate for every
 * brokered host, signed by the project's CA (ca.ts). The egress proxy (src/egress) answers the
 * container's CONNECT itself, checks the ClientHello's SNI against the CONNECT target, and pipes
 * the TLS bytes here; it registers each such connection by the port it dials from, so a request
 * here knows which CONNECT (source, host, port) it came through. A connection nobody registered
 * (any other local process) is refused before its request is read.
 */
import type { Server } from "bun";

export interface Tunnel {
  /** The container's address (the CONNECT's source). */
  src: string;
  /** The CONNECT target. */
  host: string;
  port: number;
}

/** Large enough for a push of a big repository; the body is streamed, never held. */
const MAX_BODY = 8 * 1024 ** 3;

export class Terminator {
  private server: Server<undefined>;
  private tunnels = new Map<number, Tunnel>();

  constructor(tls: { cert: string; key: string }, handle: (req: Request, t: Tunnel, server: Server<undefined>) => Promise<Response>) {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls,
      maxRequestBodySize: MAX_BODY,
      idleTimeout: 120,
      fetch: (req, server) => {
        const t = this.tunnels.get(server.requestIP(req)?.port ?? -1);
        if (!t) return new Response("lazy's broker answers only connections lazy's egress proxy opened.\n", { status: 403 });
        return handle(req, t, server);
      },
      error: (e) => new Response(`lazy's broker failed: ${e.message}\n`, { status: 502 }),
    });
  }

  get port(): number {
    return this.server.port!;
  }

  /** The egress proxy dialed from `localPort` for this CONNECT. */
  open(localPort: number, t: Tunnel): void {
    this.tunnels.set(localPort, t);
  }

  /** The tunnel from `localPort` is over: forgotten, unless a newer tunnel took that port since. */
  close(localPort: number, tunnel: Tunnel): void {
    if (this.tunnels.get(localPort) === tunnel) this.tunnels.delete(localPort);
  }

  stop(): void {
    this.server.stop(true);
    this.tunnels.clear();
  }
}
