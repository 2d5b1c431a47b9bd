/**
 * What the daemon's API and dashboard take as their own (issue 17, finding 6). Every request
 * passes these checks before its route, its body parser or its token check:
 *
 * - Its Host names this daemon: the bind address and port; `localhost` too on a loopback bind;
 *   on a wildcard bind (0.0.0.0, ::) the loopback literals and this machine's interface
 *   addresses. Any other name is refused, page and API alike: that is how DNS rebinding
 *   (evil.example resolving to 127.0.0.1) reaches a loopback server.
 * - A state-changing request (anything but GET, HEAD, OPTIONS) is JSON. A form, text/plain and
 *   multipart are what any page can send to any address without asking (CORS "simple" requests).
 * - A present Origin is our own: `http://` + the (checked) Host. A browser always tells the truth
 *   here, and the CLI sends none.
 * - A request signed in by the dashboard's cookie comes from the dashboard's own page. Cookies
 *   ignore ports, so SameSite=Strict counts every page on 127.0.0.1 as "same site" and sends the
 *   cookie along with its forms. A write needs our Origin, or no Origin and Sec-Fetch-Site:
 *   same-origin; a read is refused when the browser says it comes from another page.
 *   The token header (the CLI) needs neither: a page cannot add it to a cross-origin request
 *   without a CORS preflight, which the daemon never grants.
 */
import { networkInterfaces } from "node:os";
import { parseCookie } from "elysia/cookies";
import { LazyError } from "../util/errors";
import { urlHost } from "../util/url";
// The dashboard's sign-in (routes/dashboard.ts) names the cookie it sets; the guard reads it.
import { SESSION_COOKIE } from "./routes";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * The session cookie's value, read with Elysia's own cookie parser. The guard and the token
 * check run in onRequest, before routing (so an unauthenticated body is never parsed and 401
 * comes before 404 or 400), where the context has no `cookie` yet; `parseCookie` is the
 * parser Elysia uses for it later, given a throwaway `set` to write its jar into.
 */
export async function sessionCookie(req: Request): Promise<string | undefined> {
  const header = req.headers.get("cookie");
  if (!header) return undefined;
  const jar = await parseCookie({ headers: {}, cookie: {} } as never, header);
  const v = jar[SESSION_COOKIE]?.value;
  return typeof v === "string" && v ? v : undefined;
}

/** How a Host header spells an address: lower case, IPv6 in brackets. */
const hostForm = (h: string) => urlHost(h).toLowerCase();

const isLoopback = (h: string) => h === "localhost" || h === "[::1]" || /^127\.\d+\.\d+\.\d+$/.test(h);
const isWildcard = (h: string) => h === "0.0.0.0" || h === "[::]";

/** The Host values that name a daemon listening at host:port (host as the Host header spells it). */
function ownHosts(host: string, port: number): { hosts: Set<string>; wildcard: boolean } {
  const names = new Set([host]);
  if (isLoopback(host) || isWildcard(host)) names.add("localhost");
  // "localhost" may resolve to either loopback; a wildcard bind listens on both.
  if (host === "localhost" || isWildcard(host)) for (const n of ["127.0.0.1", "[::1]"]) names.add(n);
  const hosts = new Set<string>();
  for (const n of names) {
    hosts.add(`${n}:${port}`);
    // Browsers leave the default port out of Host.
    if (port === 80) hosts.add(n);
  }
  return { hosts, wildcard: isWildcard(host) };
}

/** On a wildcard bind, any address of this machine's interfaces reaches the daemon. */
function interfaceHost(given: string, port: number): boolean {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) {
      const h = hostForm(a.address);
      if (given === `${h}:${port}` || (port === 80 && given === h)) return true;
    }
  return false;
}

/**
 * A checker for requests to the daemon listening at `url` (`http://host:port`, read when the
 * first request arrives: the port is known only once the daemon listens). It returns the
 * refusal, or undefined when the request may go on to its route.
 */
export function requestGuard(url: () => string): (req: Request) => Promise<LazyError | undefined> {
  let own: { hosts: Set<string>; wildcard: boolean; port: number; shown: string } | undefined;
  const address = () => {
    if (own) return own;
    const u = url().replace(/^http:\/\//, "");
    const at = u.lastIndexOf(":");
    const host = hostForm(u.slice(0, at));
    const port = Number(u.slice(at + 1));
    const hosts = ownHosts(host, port);
    const shown = [...hosts.hosts]
      .filter((h) => h.includes(":"))
      .map((h) => `http://${h}`)
      .join(" or ");
    own = { ...hosts, port, shown };
    return own;
  };

  return async (req) => {
    const me = address();
    const host = (req.headers.get("host") ?? "").toLowerCase();
    const { pathname } = new URL(req.url);
    const what = `${req.method} ${pathname}`;
    if (!me.hosts.has(host) && !(me.wildcard && interfaceHost(host, me.port)))
      return new LazyError(
        "forbidden",
        `Refused ${what}: its Host ${host ? `"${host}"` : "header is missing and"} does not name this daemon (${me.shown}), so it may come from a page under another name (DNS rebinding); open the address lazy dashboard prints, or use the lazy CLI.`,
      );

    const origin = req.headers.get("origin");
    const site = req.headers.get("sec-fetch-site");
    const bearer = req.headers.get("authorization")?.startsWith("Bearer ") === true;
    const byCookie = !bearer && (await sessionCookie(req)) !== undefined;
    const ours = `http://${host}`;
    const foreign = origin !== null && origin.toLowerCase() !== ours;

    if (SAFE_METHODS.has(req.method)) {
      // Reads: a foreign page cannot see the answer (no CORS grant), but it must not hold a live
      // stream open or touch anything with the dashboard's cookie either.
      if (byCookie && pathname.startsWith("/api/") && (foreign || (site !== null && site !== "same-origin" && site !== "none")))
        return new LazyError(
          "forbidden",
          `Refused ${what}: it carries the dashboard's cookie but comes from another page (${foreign ? `Origin ${origin}` : `Sec-Fetch-Site: ${site}`}), not the dashboard at ${ours}; open the address lazy dashboard prints, or use the lazy CLI.`,
        );
      return undefined;
    }

    const type = req.headers.get("content-type");
    if ((type ?? "").split(";")[0]!.trim().toLowerCase() !== "application/json")
      return new LazyError(
        "forbidden",
        `Refused ${what}: a request that changes something must be JSON (Content-Type: application/json), and this one ${type ? `is ${type}` : "has no Content-Type"}; forms and plain text are refused so that no other page can act with the dashboard's cookie. Use the lazy CLI or the dashboard.`,
      );
    if (foreign)
      return new LazyError(
        "forbidden",
        `Refused ${what}: its Origin ${origin} is not the dashboard's own (${ours}), and no other page may act on the daemon; use the dashboard at the address lazy dashboard prints, or the lazy CLI.`,
      );
    if (byCookie && origin === null && site !== "same-origin")
      return new LazyError(
        "forbidden",
        `Refused ${what}: it is signed in by the dashboard's cookie but names no Origin (and no Sec-Fetch-Site: same-origin), so it may come from another page; a script should send the token in an Authorization header, as the lazy CLI does.`,
      );
    return undefined;
  };
}
