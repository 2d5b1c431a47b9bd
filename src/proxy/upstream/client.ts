/**
 * lazy's HTTP/1.1 client to the upstreams: a keep-alive pool per origin over Bun.connect
 * (the connections themselves: http1.ts; a request and its response on one: exchange.ts).
 *
 * Why not fetch: on this project's 2-core machine a Bun.serve + fetch pass-through did 14k
 * req/s where Bun.serve + this client did 19k (nginx: 21k), and fetch's hop to its own HTTP
 * thread was most of the proxy's added latency (bench/README.md). Re-decided on Bun 1.4 on
 * end-to-end latency and CPU, not req/s alone (bench/README.md, issue 39): in the daemon 17 %
 * less CPU a request than fetch at the same p50, and cheaper in one process at every round. The client speaks just what
 * a model API needs: a request with a whole body (or none), a response framed by
 * content-length, chunked encoding or the connection's close, streamed with backpressure
 * (the socket pauses while the agent does not read). Bytes go through untouched — no
 * decompression, no header rewriting beyond what the caller did.
 *
 * fetch stays for what this client does not do (fetch.ts): a request body that is itself a
 * stream (the Cursor route), and an https:// upstream the host's proxy carries (way.ts decides
 * that once per origin; loopback and this host's own addresses are always direct).
 * `LAZY_UPSTREAM=fetch` sends everything through fetch: the escape hatch that rules this client
 * out when an upstream's answers look wrong in the field.
 */
import { pathOf } from "../../util/url";
import { Exchange, type UpstreamResponse } from "./exchange";
import { NetError } from "./failures";
import { Conn, type Endpoint } from "./http1";

export interface Outgoing {
  method: string;
  /** Absolute URL: origin, path and query. */
  url: string;
  /** Header lines ("name: value\r\n" each) to send, without host, content-length and hop-by-hop ones. */
  headers: string;
  body: Uint8Array | undefined;
  /**
   * The agent's, asked for only when the wait for headers outlasts a sweep (exchange.ts): aborted
   * before the response headers, it fails the request (and drops the connection).
   */
  signal: () => AbortSignal;
  /** How long to wait for the response headers. */
  timeoutMs: number;
  /** Use a new connection rather than an idle one (the retry after a reset). */
  fresh: boolean;
}

const endpoints = new Map<string, Endpoint>();

function endpoint(origin: string): Endpoint | undefined {
  let e = endpoints.get(origin);
  if (e) return e;
  const u = new URL(origin);
  const tls = u.protocol === "https:";
  if (!tls && u.protocol !== "http:") return undefined;
  e = { hostname: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port || (tls ? 443 : 80)), tls, host: u.host, idle: [] };
  endpoints.set(origin, e);
  return e;
}

/**
 * `LAZY_UPSTREAM=fetch`: every upstream request goes through fetch, not this client. Read once,
 * when the proxy thread loads this module (so set it in the daemon's environment).
 */
export const UPSTREAM = upstreamMode(process.env.LAZY_UPSTREAM);

function upstreamMode(v: string | undefined): { fetch: boolean; problem?: string } {
  const s = (v ?? "").trim().toLowerCase();
  if (s === "fetch") return { fetch: true };
  if (s === "" || s === "lazy") return { fetch: false };
  return { fetch: false, problem: `LAZY_UPSTREAM=${JSON.stringify(v)} is not "fetch" or "lazy": lazy's own HTTP client is used` };
}

export function request(out: Outgoing): Promise<UpstreamResponse> {
  const target = pathOf(out.url);
  // pathOf gives "/" for a URL without a path; the origin is then the whole URL.
  const origin = out.url.endsWith(target) ? out.url.slice(0, out.url.length - target.length) : out.url;
  const ep = endpoint(origin);
  if (!ep) return Promise.reject(new NetError("ERR_INVALID_URL", `unsupported URL ${origin}`));
  return new Promise((resolve, reject) => {
    const head = `${out.method} ${target} HTTP/1.1\r\nhost: ${ep.host}\r\n${out.headers}${out.body !== undefined ? `content-length: ${out.body.length}\r\n` : ""}\r\n`;
    let payload: Buffer;
    if (out.body?.length) {
      payload = Buffer.allocUnsafe(Buffer.byteLength(head, "latin1") + out.body.length);
      payload.set(out.body, payload.write(head, 0, "latin1"));
    } else payload = Buffer.from(head, "latin1");
    const ex = new Exchange(out.method, payload, resolve, reject, out.signal, performance.now() + out.timeoutMs);
    const conn = out.fresh ? undefined : ep.idle.pop();
    if (conn) conn.start(ex, true);
    else Conn.open(ep, ex);
  });
}

/** Headers as header lines, for this client. */
export function toLines(headers: Headers): string {
  let s = "";
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`;
  return s;
}
