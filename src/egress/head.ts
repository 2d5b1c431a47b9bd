/**
 * The one request head the egress proxy reads from a container before it dials anything:
 * bounded in size (the caller stops reading at MAX_HEAD) and parsed only as far as needed.
 *
 * Supported: `CONNECT host:port HTTP/1.x` (the bytes after it are tunnelled untouched: TLS
 * stays end to end) and an absolute-form plain-HTTP request (`GET http://host[:port]/path
 * HTTP/1.x`), whose request line is rewritten to origin-form and whose Proxy-* headers are
 * dropped before it is sent on; its Host header must name the URL's host and port (one is
 * added when there is none), so the host the policy allowed is the one the server serves. Not supported: origin-form requests (a client that does not
 * know it talks to a proxy), IPv6 literals, `https://` in absolute form, HTTP/2 prior
 * knowledge, half-closed connections (a client that shuts its sending side down after the
 * request has the whole connection closed: Bun's default). One upstream per client
 * connection: later requests on a kept-alive connection go to the same host and port,
 * whatever they name (their bytes are still checked for placeholders); behind the host's own
 * proxy, which routes by each request's URL, a connection carries one request (chain.ts).
 */

/** Bytes a head may take before the proxy answers 431. */
export const MAX_HEAD = 16 * 1024;

export type Head =
  | { kind: "connect"; host: string; port: number; raw: string }
  | { kind: "http"; method: string; host: string; port: number; path: string; raw: string; forward: string }
  | { kind: "bad"; status: number; why: string; raw: string; remedy?: string };

/** Where the head ends (after its blank line), or -1. */
export function headEnd(buf: Buffer): number {
  const i = buf.indexOf("\r\n\r\n");
  return i < 0 ? -1 : i + 4;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/;

/** Parse a complete head (latin1, ending in CRLF CRLF). */
export function parse(raw: string): Head {
  const lines = raw.slice(0, -4).split("\r\n");
  const m = /^(\S+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? "");
  if (!m || !TOKEN.test(m[1]!)) return { kind: "bad", status: 400, why: "not an HTTP/1.x request line", raw };
  // A bare CR or LF, a NUL, or a header line that is not `name:` (obs-fold, a space before the
  // colon) is where lazy and the next proxy could read two different requests: refused.
  if (/[\r\n\0]/.test(lines.join("")) || lines.slice(1).some((l) => !HEADER.test(l)))
    return { kind: "bad", status: 400, why: "a malformed header line (bare CR or LF, or not name: value)", raw };
  const [, method, target, version] = m as unknown as [string, string, string, string];
  if (method === "CONNECT") {
    const a = /^([^:/?#@[\]\s]+):(\d{1,5})$/.exec(target);
    if (!a) return { kind: "bad", status: 400, why: "CONNECT needs host:port", raw };
    return { kind: "connect", host: a[1]!, port: Number(a[2]), raw };
  }
  const u = /^http:\/\/([^:/?#@[\]\s]+)(?::(\d{1,5}))?([/?][^\s]*)?$/i.exec(target);
  if (!u)
    return {
      kind: "bad",
      status: 400,
      why: target.startsWith("/")
        ? "a request without an absolute http:// URL (lazy's egress proxy is a forward proxy)"
        : "only CONNECT and absolute http:// requests are supported",
      raw,
    };
  const port = u[2] === undefined ? 80 : Number(u[2]);
  let path = u[3] ?? "/";
  if (path.startsWith("?")) path = `/${path}`;
  const host = u[1]!;
  const headers = lines.slice(1).filter((l) => !/^proxy-(connection|authorization)\s*:/i.test(l));
  // The Host the upstream reads must be the one the policy checked: a server behind an allowed
  // address picks its virtual host by it (refused, not rewritten: no client sends another).
  const named = headers.filter((l) => /^host:/i.test(l));
  const authority = `${host}${port === 80 ? "" : `:${port}`}`;
  if (named.length > 1) return { kind: "bad", status: 400, why: "more than one Host header", raw, remedy: "send one Host header" };
  if (named.length === 1) {
    const value = named[0]!.slice(5).trim();
    if (!sameAuthority(value, host, port))
      return {
        kind: "bad",
        status: 403,
        why: `the Host header names ${JSON.stringify(value.slice(0, 200))} but the request goes to ${authority}`,
        raw,
        remedy: `send Host: ${authority} (the URL's own host), or ask for the host you mean in the URL`,
      };
  } else headers.unshift(`Host: ${authority}`);
  const forward = `${[`${method} ${path} ${version}`, ...headers].join("\r\n")}\r\n\r\n`;
  return { kind: "http", method, host, port, path, raw, forward };
}

/** Whether a Host value names `host:port` (case, a trailing dot and the default port aside). */
function sameAuthority(value: string, host: string, port: number): boolean {
  const m = /^([^:/?#@[\]\s]+?)\.?(?::(\d{1,5}))?$/.exec(value.toLowerCase());
  return !!m && m[1] === host.toLowerCase().replace(/\.$/, "") && (m[2] === undefined ? 80 : Number(m[2])) === port;
}
