/**
 * Bun.serve on the first free port at or above the one asked for. reusePort is off: with it,
 * two daemons could bind one port on Linux and split the traffic (docs/wire.md, "Runtime traps"). `shared` is for
 * threads of one process sharing a port the caller has made sure is its own (proxy/listen/shared-port.ts):
 * exactly that port, with reusePort.
 */
import type { ServeOptions, Server } from "bun";

type Options = Omit<ServeOptions, "hostname" | "port" | "reusePort"> & {
  fetch: (req: Request, server: Server<undefined>) => Response | Promise<Response>;
};

export function listen(host: string, port: number, opts: Options, { tries = 50, shared = false } = {}): Server<undefined> {
  // development: false — Bun's default follows NODE_ENV, and in development mode an uncaught
  // error becomes a page with its stack trace; lazy's servers answer errors themselves.
  const serve = (p: number) =>
    Bun.serve({ development: false, ...opts, hostname: host, port: p, reusePort: shared } as ServeOptions) as Server<undefined>;
  if (shared) return serve(port);
  let lastError: unknown;
  for (let p = port, n = 0; n < (port === 0 ? 1 : tries) && p <= 65535; p++, n++) {
    try {
      return serve(p);
    } catch (e) {
      lastError = e;
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "EADDRINUSE" && !/in use/i.test(String((e as Error).message))) throw e;
    }
  }
  const why = (lastError as Error)?.message ?? "unknown";
  if (tries === 1) throw new Error(`${host}:${port} is taken: ${why}`);
  throw new Error(`no free port on ${host} from ${port} to ${port + tries - 1}: ${why}`);
}
