/**
 * One HTTP/1.1 connection to an upstream, for the pool in upstream.ts: writing a request (with
 * backpressure), parsing the response head, and framing its body by content-length, chunked
 * encoding or the connection's close for the exchange it carries (exchange.ts). Bytes go
 * through untouched (no decompression).
 */
import type { Socket } from "bun";
import { atEndOfTurn } from "../../util/turn";
import type { Carrier, Exchange } from "./exchange";
import { NetError, TLS_FAILED } from "./failures";

export interface Endpoint {
  hostname: string;
  port: number;
  tls: boolean;
  /** The host header: host[:port] as written in the URL. */
  host: string;
  idle: Conn[];
}

/** An idle connection is closed after this long (servers close theirs at 5 s and up). */
const IDLE_SECONDS = 4;
const CRLF2 = Buffer.from("\r\n\r\n");
/** Never passed on: they describe one connection, not the message (content-length is re-derived). */
export const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
  "proxy-connection",
  "content-length",
]);

type Framing =
  | { kind: "none" }
  | { kind: "length"; left: number }
  | { kind: "chunked"; left: number; state: "size" | "data" | "crlf" | "trailer" }
  | { kind: "close" };

/** A connection to one endpoint, and the parser of the responses coming back on it. */
export class Conn implements Carrier {
  socket!: Socket<Conn>;
  exchange: Exchange | undefined;
  /** It carried an earlier request (taken from the pool). */
  private reused = false;
  /** A byte of the current exchange's response arrived. */
  private gotByte = false;
  /** Request bytes the socket has not taken yet (written on drain). */
  private pending: Buffer | undefined;
  private buf: Buffer | undefined;
  private framing: Framing = { kind: "none" };
  private keepAlive = true;
  private closed = false;

  private constructor(readonly ep: Endpoint) {}

  static open(ep: Endpoint, ex: Exchange) {
    const conn = new Conn(ep);
    conn.exchange = ex;
    ex.attach(conn);
    const ready = (s: Socket<Conn>) => {
      conn.socket = s;
      // Given up on (a deadline, an abort) while connecting: close what just opened.
      if (ex.finished) return void s.terminate();
      conn.start(ex, false);
    };
    Bun.connect<Conn>({
      hostname: ep.hostname,
      port: ep.port,
      tls: ep.tls,
      socket: {
        // Over TLS nothing may be written before the handshake is done.
        open: (s) => (ep.tls ? undefined : ready(s)),
        handshake: (s, ok, err) => {
          if (ok) return ready(s);
          conn.closed = true;
          s.terminate();
          const code = (err as { code?: string } | undefined)?.code;
          ex.fail(new NetError(TLS_FAILED, `${err?.message ?? "certificate not trusted"}${code ? ` (${code})` : ""}`));
        },
        data: (_s, d) => conn.onData(d),
        drain: () => conn.flush(),
        close: () => conn.onClose(),
        error: (_s, e) => conn.onClose(e),
        connectError: (_s, e) => conn.onClose(e),
        timeout: () => conn.onIdleTimeout(),
      },
    }).catch((e: Error & { code?: string }) => {
      conn.closed = true;
      ex.fail(new NetError(e.code ?? "ECONNREFUSED", e.message));
    });
  }

  start(ex: Exchange, reused: boolean) {
    this.exchange = ex;
    ex.attach(this);
    this.reused = reused;
    this.gotByte = false;
    this.framing = { kind: "none" };
    this.socket.timeout(0); // a model may think for minutes: no idle cut while busy
    this.pending = ex.payload;
    // Sent with the other requests of this turn (util/turn.ts); a drain before then sends it too.
    atEndOfTurn(this.flushLater);
  }

  /** flush, bound once per connection rather than a closure per request. */
  private flushLater = () => this.flush();

  flush() {
    const p = this.pending;
    if (!p || this.closed) return;
    // The request's first write: not for an agent that is already gone (exchange.ts).
    if (p === this.exchange?.payload && this.exchange.abandoned()) return;
    const n = this.socket.write(p);
    this.pending = n >= p.length ? undefined : p.subarray(Math.max(n, 0));
  }

  pause() {
    this.socket.pause();
  }

  resume() {
    this.socket.resume();
  }

  destroy() {
    if (this.closed) return;
    this.closed = true;
    this.socket?.terminate();
    this.unpool();
  }

  private unpool() {
    const i = this.ep.idle.indexOf(this);
    if (i !== -1) this.ep.idle.splice(i, 1);
  }

  private onIdleTimeout() {
    if (!this.exchange) this.destroy();
  }

  private onClose(e?: Error & { code?: string }) {
    const was = this.closed;
    this.closed = true;
    this.unpool();
    const ex = this.exchange;
    this.exchange = undefined;
    if (!ex || ex.finished) return;
    if (!ex.headersDone) {
      if (was) return;
      // A pooled connection the server closed while idle, just as it was reused: routine, not a
      // failure of the upstream. The request goes again on a new connection, uncounted.
      if (this.reused && !this.gotByte) return Conn.open(this.ep, ex);
      // Nothing came back: the upstream reset (or refused) before answering.
      const code = e?.code ?? "ECONNRESET";
      return ex.fail(
        new NetError(
          code === "ECONNREFUSED" ? code : this.gotByte ? "ECONNRESET" : code,
          e?.message ?? "the upstream closed the connection before answering",
        ),
      );
    }
    if (this.framing.kind === "close" && !e) return ex.complete();
    ex.fail(new NetError("ECONNRESET", e?.message ?? "the upstream closed the connection mid-response"));
  }

  private onData(d: Buffer) {
    const ex = this.exchange;
    if (!ex) return this.destroy(); // bytes nobody asked for: this connection is not reusable
    this.gotByte = true;
    this.buf = this.buf ? Buffer.concat([this.buf, d]) : d;
    while (this.buf && this.exchange === ex && !ex.finished) {
      if (!ex.headersDone) {
        if (!this.parseHead(ex)) return;
      } else if (!this.parseBody(ex)) return;
    }
  }

  /** Parse a response head out of the buffer; false when more bytes are needed. */
  private parseHead(ex: Exchange): boolean {
    const buf = this.buf!;
    const end = buf.indexOf(CRLF2);
    if (end === -1) {
      if (buf.length > 256 * 1024) ex.fail(new NetError("EPROTO", "the upstream sent a response head over 256 KiB"));
      return false;
    }
    const lines = buf.toString("latin1", 0, end).split("\r\n");
    this.buf = end + 4 < buf.length ? buf.subarray(end + 4) : undefined;
    const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0]!);
    if (!status) {
      ex.fail(new NetError("EPROTO", `the upstream answered something other than HTTP/1.x: ${JSON.stringify(lines[0]!.slice(0, 40))}`));
      return false;
    }
    const code = Number(status[2]);
    if (code >= 100 && code < 200) {
      if (code === 101) ex.fail(new NetError("EPROTO", "the upstream switched protocols"));
      return code !== 101; // 100 Continue, 103 Early Hints: the real answer follows
    }
    const headers = new Headers();
    let length: number | undefined;
    let chunked = false;
    this.keepAlive = status[1] === "1";
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (!HOP_BY_HOP.has(name)) headers.append(name, value);
      else if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = /chunked\s*$/i.test(value);
      else if (name === "connection") this.keepAlive = status[1] === "1" ? !/\bclose\b/i.test(value) : /\bkeep-alive\b/i.test(value);
    }
    const none = ex.method === "HEAD" || code === 204 || code === 304;
    if (none) this.framing = { kind: "none" };
    else if (chunked) this.framing = { kind: "chunked", left: 0, state: "size" };
    else if (length !== undefined && Number.isFinite(length) && length >= 0)
      this.framing = length === 0 ? { kind: "none" } : { kind: "length", left: length };
    else {
      this.framing = { kind: "close" };
      this.keepAlive = false;
    }
    ex.headers(code, status[3] ?? "", headers, chunked ? undefined : length, this.framing.kind !== "none");
    if (this.framing.kind === "none") this.complete(ex);
    return true;
  }

  /** Move body bytes from the buffer to the exchange; false when more bytes are needed. */
  private parseBody(ex: Exchange): boolean {
    const f = this.framing;
    let buf = this.buf!;
    if (f.kind === "close") {
      this.buf = undefined;
      ex.data(buf);
      return false;
    }
    if (f.kind === "length") {
      if (buf.length <= f.left) {
        f.left -= buf.length;
        this.buf = undefined;
        ex.data(buf);
        if (f.left === 0) this.complete(ex);
        return false;
      }
      ex.data(buf.subarray(0, f.left));
      this.buf = buf.subarray(f.left);
      f.left = 0;
      this.complete(ex);
      return false;
    }
    if (f.kind !== "chunked") return false;
    for (;;) {
      if (f.state === "data") {
        const n = Math.min(f.left, buf.length);
        if (n) ex.data(buf.subarray(0, n));
        f.left -= n;
        buf = buf.subarray(n);
        if (f.left > 0) break;
        f.state = "crlf";
      }
      if (f.state === "crlf") {
        if (buf.length < 2) break;
        buf = buf.subarray(2);
        f.state = "size";
      }
      const nl = buf.indexOf(10);
      if (nl === -1) {
        if (buf.length > 4096) ex.fail(new NetError("EPROTO", "the upstream sent a malformed chunk"));
        break;
      }
      const line = buf.toString("latin1", 0, nl).trim();
      buf = buf.subarray(nl + 1);
      if (f.state === "trailer") {
        if (line === "") {
          this.buf = buf.length ? buf : undefined;
          this.complete(ex);
          return false;
        }
        continue;
      }
      const size = parseInt(line, 16);
      if (!Number.isFinite(size) || size < 0) {
        ex.fail(new NetError("EPROTO", "the upstream sent a malformed chunk size"));
        return false;
      }
      if (size === 0) f.state = "trailer";
      else {
        f.state = "data";
        f.left = size;
      }
    }
    this.buf = buf.length ? buf : undefined;
    return false;
  }

  /** The response is whole: hand the connection back to the pool if it can carry another. */
  private complete(ex: Exchange) {
    ex.complete(); // its reader no longer pauses or resumes this connection
    this.exchange = undefined;
    if (!this.keepAlive || this.buf || this.pending || this.closed) return this.destroy();
    this.socket.resume();
    this.socket.timeout(IDLE_SECONDS);
    this.ep.idle.push(this);
  }
}
