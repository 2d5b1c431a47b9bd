/**
 * Chaining behind the host's own proxy (a company proxy, `[container] inherit_network_env`):
 * what lazy's egress proxy says to it. A tunnel (the container's CONNECT) becomes lazy's own
 * CONNECT to it; a plain-HTTP request is sent to it in absolute form (`GET http://host/path
 * HTTP/1.1`), as a client configured with that proxy would: many company proxies refuse
 * CONNECT to port 80. Either way the proxy's password (Proxy-Authorization) is added here, on
 * the host, and the container never sees it.
 *
 * A proxy routes each absolute-form request by the URL it names, so a second request on the
 * same connection could name a host the policy never allowed: chained, a client connection
 * carries exactly one request (`Connection: close`, its body framed here by Content-Length or
 * chunked encoding, whatever follows dropped). Direct connections need none of this: they go to
 * the one address the policy allowed, whatever the bytes name.
 */
import type { Head } from "./head";

/** The host's own proxy. */
export interface Via {
  host: string;
  port: number;
  /** The Proxy-Authorization value, if the host's proxy URL had a user. */
  auth: string | null;
  /** The proxy as it may be shown (no password). */
  shown: string;
}

type Http = Extract<Head, { kind: "http" }>;

/** The CONNECT that opens a tunnel through the host's proxy: the name, which it resolves on its side. */
export function connectLine(head: { host: string; port: number }, via: Via): string {
  const target = `${head.host.includes(":") ? `[${head.host}]` : head.host}:${head.port}`;
  return `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${via.auth ? `Proxy-Authorization: ${via.auth}\r\n` : ""}\r\n`;
}

/** Hop-by-hop headers of the container's request, which the host's proxy never sees. */
const HOP = /^(proxy-[a-z-]*|connection|keep-alive)\s*:/i;

/**
 * The container's plain-HTTP request head as the host's proxy gets it: absolute form, the
 * container's own Proxy-* and connection headers gone, lazy's Proxy-Authorization (the host's
 * password) and `Connection: close` added. The rest (the provider's own headers) as sent.
 */
export function absoluteHead(head: Http, via: Via): string {
  const lines = head.raw.slice(0, -4).split("\r\n");
  const version = /HTTP\/1\.[01]$/.exec(lines[0]!)![0];
  const url = `http://${head.host}${head.port === 80 ? "" : `:${head.port}`}${head.path}`;
  const out = [`${head.method} ${url} ${version}`, ...lines.slice(1).filter((l) => !HOP.test(l))];
  if (via.auth) out.push(`Proxy-Authorization: ${via.auth}`);
  out.push("Connection: close");
  return `${out.join("\r\n")}\r\n\r\n`;
}

/** A chunk-size line may not be longer than this. */
const MAX_LINE = 4096;

/**
 * Where the first request's body ends: the bytes of it pass, the rest is dropped. Throws (a
 * message for a 400) on a body it cannot frame: both Content-Length and Transfer-Encoding
 * (request smuggling's shape), a Content-Length that is not one number, a broken chunk.
 */
export class OneRequest {
  private left: number;
  private chunked: boolean;
  /** Chunked: "size" (reading a size line), "data", "crlf" (after a chunk), "trailer" (after the last). */
  private state: "size" | "data" | "crlf" | "trailer" = "size";
  private line = "";
  done = false;

  constructor(head: Http) {
    const lines = head.raw.slice(0, -4).split("\r\n").slice(1);
    const values = (name: string) =>
      lines.filter((l) => l.toLowerCase().startsWith(`${name}:`)).map((l) => l.slice(name.length + 1).trim());
    const te = values("transfer-encoding");
    const cl = values("content-length");
    if (te.length && cl.length) throw new Error("a request with both Content-Length and Transfer-Encoding");
    if (te.length && te.join(",").toLowerCase().replace(/\s/g, "") !== "chunked")
      throw new Error(`a Transfer-Encoding other than chunked (${te.join(", ")})`);
    if (cl.length && (new Set(cl).size !== 1 || !/^\d{1,15}$/.test(cl[0]!))) throw new Error("a Content-Length that is not one number");
    this.chunked = te.length > 0;
    this.left = cl.length ? Number(cl[0]) : 0;
    this.done = !this.chunked && this.left === 0;
  }

  /** The part of `d` that belongs to the request (empty once it is whole). */
  take(d: Buffer): Buffer {
    if (this.done) return d.subarray(0, 0);
    if (!this.chunked) {
      const n = Math.min(this.left, d.length);
      this.left -= n;
      this.done = this.left === 0;
      return d.subarray(0, n);
    }
    let i = 0;
    while (i < d.length && !this.done) {
      if (this.state === "data") {
        const n = Math.min(this.left, d.length - i);
        i += n;
        this.left -= n;
        if (this.left === 0) this.state = "crlf";
        continue;
      }
      const nl = d.indexOf(10, i);
      const end = nl < 0 ? d.length : nl + 1;
      this.line += d.subarray(i, end).toString("latin1");
      i = end;
      if (this.line.length > MAX_LINE) throw new Error("a chunk line over 4 KiB");
      if (nl < 0) break;
      // CRLF only, and no CR inside: a line the next proxy could end elsewhere is refused.
      if (!this.line.endsWith("\r\n") || this.line.slice(0, -2).includes("\r")) throw new Error("a chunk line not ended by CRLF");
      const line = this.line.slice(0, -2);
      this.line = "";
      if (this.state === "crlf") {
        if (line !== "") throw new Error("a chunk not followed by CRLF");
        this.state = "size";
      } else if (this.state === "size") {
        const m = /^([0-9a-fA-F]{1,12})(?:\s*;.*)?$/.exec(line);
        if (!m) throw new Error("a chunk size that is not hexadecimal");
        this.left = Number.parseInt(m[1]!, 16);
        this.state = this.left === 0 ? "trailer" : "data";
      } else if (line === "") this.done = true; // the blank line after the trailers
    }
    return d.subarray(0, i);
  }
}

/** The status of an answer head (null while it has not arrived whole, or is not HTTP). */
export function statusOf(text: string): { status: string | null; end: number } {
  const end = text.indexOf("\r\n\r\n");
  return { status: /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? null, end };
}
