/**
 * One listener of a proxy thread: Bun.serve on an address, probing upward from the port asked
 * for unless told exactly which. Requests are handed to the forwarder. Whether the proxy as a
 * whole is up (for status and doctor) is the ModelProxy's to say (main/model-proxy.ts), from these answers.
 */
import type { Server } from "bun";
import { listen } from "../../util/listen";
import type { Logger } from "../../util/log";
import { IDLE_SECONDS, SERVER_MAX_BODY } from "./gate";

export class ProxyServer {
  error: string | undefined;
  private server: Server<undefined> | undefined;

  constructor(
    private log: Logger,
    private handler: (req: Request, server: Server<undefined>) => Response | Promise<Response>,
  ) {}

  /**
   * `shared`: exactly this port, shared with the proxy's other threads (shared-port.ts).
   * `exact`: this port or none (a restarted thread returning to its address).
   */
  async start(host: string, port: number, shared = false, exact = false): Promise<void> {
    try {
      this.server = listen(
        host,
        port,
        {
          // A request must arrive whole within this, and an idle keep-alive connection goes after
          // it (a container must not hold sockets for ever). A request whose body is read gets no
          // deadline: models think for minutes before their first byte (gate.ts; docs/wire.md, "Runtime traps").
          idleTimeout: IDLE_SECONDS,
          // Bun's own backstop for every framing, chunked included; the gate's bound is below it.
          maxRequestBodySize: SERVER_MAX_BODY,
          fetch: (req, server) => this.handler(req, server),
        },
        { shared, tries: exact ? 1 : undefined },
      );
    } catch (e) {
      this.error = (e as Error).message;
      this.log.error(`proxy failed to start: ${this.error}`);
    }
  }

  get address(): { host: string; port: number } | null {
    return this.server ? { host: this.server.hostname ?? "127.0.0.1", port: this.server.port ?? 0 } : null;
  }

  stop(): void {
    this.server?.stop(true);
    this.server = undefined;
  }
}
