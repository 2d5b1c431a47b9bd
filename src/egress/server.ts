/**
 * The egress proxy's listener on one address (a project network's gateway, never 0.0.0.0) and
 * what it does with each connection: read one bounded head within a time bound (head.ts), ask
 * the policy and the leak check, dial, then pipe bytes both ways with backpressure (a side
 * that cannot take more pauses the other). Bun.listen/Bun.connect: Bun.serve cannot tunnel.
 */
import type { Socket, TCPSocketListener } from "bun";
import { joined } from "./canary";
import { absoluteHead, connectLine, OneRequest, statusOf, type Via } from "./chain";
import { type Head, headEnd, MAX_HEAD, parse } from "./head";
import type { Brokered, Hooks, Refusal } from "./hooks";
import { answer, flush, pass } from "./pipe";

export type { Via } from "./chain";
export type { Brokered, Dial, Done, Hooks, Refusal } from "./hooks";

/** A head must arrive within this, or the connection is cut (408). */
export const HEAD_TIMEOUT_MS = 10_000;
/** How long a dial may take. */
const DIAL_TIMEOUT_MS = 10_000;
/**
 * Open connections one source address may hold, and all sources together. npm's install of
 * lazy's default image (three harnesses and their optional platform packages) holds more than
 * 64 tunnels at once through a proxy, and a refused one is a 429 npm gives up on: the image then
 * lacks Claude Code's native binary. 256 is the model proxy's per-source bound too.
 */
export const PER_SOURCE = 256;
const TOTAL = 1024;

interface Conn {
  src: string;
  at: number;
  chunks: Buffer[];
  size: number;
  timer: Timer | undefined;
  phase: "head" | "deciding" | "open" | "closed";
  head?: Extract<Head, { kind: "connect" | "http" }>;
  up?: Socket<Up>;
  /** Bytes for the upstream not yet taken (before it opened, or while it drains). */
  toUp: Buffer[];
  /** Bytes for the client not yet taken. */
  toClient: Buffer[];
  clientEnded: boolean;
  bytesIn: number;
  bytesOut: number;
  /** Plain HTTP: every byte to the upstream is checked for a placeholder; the tail of the last chunk carries over. */
  scanTail: string | null;
  /** Plain HTTP through the host's proxy: the one request's end (chain.ts). */
  one: OneRequest | null;
  status: number;
  note: string | null;
  /** A brokered tunnel: its terminator connection's local port once open. */
  brokered?: { b: Brokered; localPort: number | null };
  /** A brokered tunnel's first client bytes, held until the ClientHello names the CONNECT's host (null: passed). */
  hello: Buffer | null;
}

interface Up {
  conn: Conn;
  client: Socket<Conn>;
  /** Chained: the host proxy's answer to lazy's CONNECT, until its head has arrived. */
  chain: string | null;
  /** Chained plain HTTP: the answer's head, held until its status is known (a 407 is lazy's to word). */
  peek: string | null;
}

/** The host proxy's answer head is bounded like a client's. */
const CHAIN_HEAD_MAX = 8 * 1024;

export class Listener {
  private server: TCPSocketListener<Conn>;
  private perSource = new Map<string, number>();
  private open = 0;

  constructor(
    host: string,
    port: number,
    private hooks: Hooks,
    private maxLeak: () => number,
  ) {
    this.server = Bun.listen<Conn>({
      hostname: host,
      port,
      exclusive: true,
      socket: {
        open: (s) => this.opened(s),
        data: (s, d) => this.data(s, d),
        drain: (s) => {
          const c = s.data;
          if (c.up && flush(s, c.toClient)) c.up.resume();
        },
        end: (s) => this.clientEnd(s),
        close: (s) => this.closed(s),
        error: (s) => this.closed(s),
      },
    });
  }

  get port(): number {
    return this.server.port;
  }

  stop(): void {
    this.server.stop(true);
  }

  private opened(s: Socket<Conn>): void {
    const src = s.remoteAddress;
    const c: Conn = {
      src,
      at: Date.now(),
      chunks: [],
      size: 0,
      timer: undefined,
      phase: "head",
      toUp: [],
      toClient: [],
      clientEnded: false,
      bytesIn: 0,
      bytesOut: 0,
      scanTail: null,
      one: null,
      status: 0,
      note: null,
      hello: null,
    };
    s.data = c;
    const n = (this.perSource.get(src) ?? 0) + 1;
    this.perSource.set(src, n);
    this.open++;
    if (!this.hooks.admit(src)) {
      this.refuse(s, { status: 403, why: `${src} is not on this project's network`, remedy: "use the egress proxy of your own project" });
      return;
    }
    if (n > PER_SOURCE || this.open > TOTAL) {
      this.refuse(s, {
        status: 429,
        why: `${src} has ${n - 1} connections open through lazy's egress proxy (at most ${PER_SOURCE})`,
        remedy: "close some",
      });
      return;
    }
    c.timer = setTimeout(() => {
      if (c.phase === "head")
        this.refuse(s, {
          status: 408,
          why: `no complete request head within ${HEAD_TIMEOUT_MS / 1000} s`,
          remedy: "send the request at once",
        });
    }, HEAD_TIMEOUT_MS);
  }

  private refuse(s: Socket<Conn>, r: Refusal): void {
    const c = s.data;
    if (c.phase === "closed") return;
    c.status = r.status;
    c.note = `egress: ${r.why}`;
    answer(s, r.status, `lazy's egress proxy refused this: ${r.why}. To allow it: ${r.remedy}.`);
    this.finish(s);
  }

  private data(s: Socket<Conn>, d: Buffer): void {
    const c = s.data;
    if (c.phase === "closed") return;
    if (c.phase === "open" || c.phase === "deciding") {
      if (c.one) {
        d = this.framed(s, d);
        if (!d.length) return;
      }
      c.bytesOut += d.length;
      if (c.hello !== null) {
        this.hello(s, d);
        return;
      }
      if (c.scanTail !== null && !this.scan(s, d)) return;
      if (!pass(c.up, c.toUp, d) && (c.up || c.toUp.reduce((n, b) => n + b.length, 0) > MAX_HEAD)) s.pause();
      return;
    }
    // The head: bounded before it is read whole.
    c.chunks.push(Buffer.from(d));
    c.size += d.length;
    const buf = c.chunks.length === 1 ? c.chunks[0]! : Buffer.concat(c.chunks);
    c.chunks = [buf];
    const end = headEnd(buf.subarray(0, MAX_HEAD + 4));
    if (end < 0) {
      if (c.size > MAX_HEAD) this.refuse(s, { status: 431, why: `a request head over ${MAX_HEAD} bytes`, remedy: "send a smaller one" });
      return;
    }
    clearTimeout(c.timer);
    const head = parse(buf.subarray(0, end).toString("latin1"));
    if (head.kind !== "bad") c.head = head; // its row names what it asked for, refused or not
    // The head as sent, and its header values run together (a secret cut across two fields);
    // looked at first, so a refused head that carries a secret still stops its task.
    const leak = this.hooks.leak(c.src, `${head.raw}\n${joined(head.raw)}`);
    if (leak) {
      this.refuse(s, leak);
      return;
    }
    if (head.kind === "bad") {
      this.refuse(s, {
        status: head.status,
        why: head.why,
        remedy: head.remedy ?? "send CONNECT host:port, or an absolute http:// request",
      });
      return;
    }
    c.phase = "deciding";
    const rest = buf.subarray(end);
    c.chunks = [];
    if (head.kind === "http") {
      c.scanTail = "";
      if (rest.length && !this.scan(s, rest)) return;
    }
    c.bytesOut += rest.length;
    if (rest.length) c.toUp.push(Buffer.from(rest));
    void this.hooks.decide(c.src, head).then(
      (r) => {
        if (c.phase === "closed") return;
        if ("status" in r) this.refuse(s, r);
        else if (r.brokered) {
          // The ClientHello may have come with the CONNECT: held with what follows.
          c.brokered = { b: r.brokered, localPort: null };
          const early = c.toUp;
          c.toUp = [];
          c.hello = Buffer.alloc(0);
          this.dial(s, r.address, undefined, r.port);
          for (const b of early) this.hello(s, b);
        } else if (this.sendHead(s, r.via)) this.dial(s, r.address, r.via);
      },
      (e: unknown) =>
        this.refuse(s, { status: 502, why: `lazy's egress proxy failed: ${(e as Error).message}`, remedy: "see lazy daemon logs" }),
    );
  }

  /**
   * Plain HTTP: the head goes first, origin-form to the host, or absolute-form to the host's
   * proxy with only the one request's bytes after it (chain.ts). False when refused.
   */
  private sendHead(s: Socket<Conn>, via: Via | undefined): boolean {
    const c = s.data;
    const head = c.head!;
    if (head.kind !== "http") return true;
    if (!via) {
      c.toUp.unshift(Buffer.from(head.forward, "latin1"));
      return true;
    }
    try {
      c.one = new OneRequest(head);
    } catch (e) {
      this.refuse(s, { status: 400, why: (e as Error).message, remedy: "send one request with a Content-Length or chunked body" });
      return false;
    }
    const body = c.toUp.map((b) => this.framed(s, b));
    if (c.phase === "closed") return false;
    c.toUp = [Buffer.from(absoluteHead(head, via), "latin1"), ...body.filter((b) => b.length)];
    return true;
  }

  /** Chained plain HTTP: the part of `d` that is the one request's (a framing error refuses it). */
  private framed(s: Socket<Conn>, d: Buffer): Buffer {
    try {
      return s.data.one!.take(d);
    } catch (e) {
      this.refuse(s, { status: 400, why: (e as Error).message, remedy: "send one well-formed request a connection" });
      return d.subarray(0, 0);
    }
  }

  /**
   * A brokered tunnel's first bytes: held until the ClientHello is whole, then passed on only
   * when its SNI names the CONNECT's host (a tunnel to one host cannot carry another's name).
   */
  private hello(s: Socket<Conn>, d: Buffer): void {
    const c = s.data;
    const buf = Buffer.concat([c.hello!, d]);
    const verdict = c.brokered!.b.hello(buf);
    if (verdict === "need") {
      c.hello = buf;
      return;
    }
    if (verdict !== null) {
      c.status = 421;
      c.note = `egress: ${verdict}`;
      s.end();
      this.finish(s);
      return;
    }
    c.hello = null;
    if (!pass(c.up, c.toUp, buf)) s.pause();
  }

  /** Plain HTTP: refuse the connection when these bytes (with the last chunk's tail) carry a placeholder or MCP token. */
  private scan(s: Socket<Conn>, d: Buffer): boolean {
    const c = s.data;
    const text = c.scanTail + d.toString("latin1");
    const leak = this.hooks.leak(c.src, text);
    if (leak) {
      this.refuse(s, leak);
      return false;
    }
    c.scanTail = text.slice(-Math.max(this.maxLeak() - 1, 0));
    return true;
  }

  private dial(client: Socket<Conn>, address: string, via?: Via, port?: number): void {
    const c = client.data;
    const head = c.head!;
    // Chained: the socket to the host's proxy before it has answered (ended if the timer fires).
    let pending: Socket<Up> | undefined;
    const timer = setTimeout(() => {
      pending?.end();
      if (!c.up)
        this.refuse(client, {
          status: 504,
          why: `${head.host}:${head.port} did not answer within ${DIAL_TIMEOUT_MS / 1000} s${via ? ` (through the host's proxy ${via.shown})` : ""}`,
          remedy: "try again later",
        });
    }, DIAL_TIMEOUT_MS);
    const unreachable = (e: Error) => {
      clearTimeout(timer);
      this.refuse(client, {
        status: 502,
        why: via
          ? `the host's proxy ${via.shown} could not be reached (${e.message ?? e})`
          : `${head.host}:${head.port} refused the connection (${e.message ?? e})`,
        remedy: via
          ? `check ${head.kind === "http" ? "HTTP_PROXY" : "HTTPS_PROXY"} in the daemon's environment (lazy daemon restart from a shell that has it right)`
          : "check the host and port",
      });
    };
    Bun.connect<Up>({
      hostname: via ? via.host : address,
      port: via ? via.port : (port ?? head.port),
      data: { conn: c, client, chain: null, peek: null },
      socket: {
        open: (up) => {
          if (c.phase === "closed") {
            clearTimeout(timer);
            up.end();
            return;
          }
          if (c.brokered) {
            c.brokered.localPort = up.localPort;
            c.brokered.b.open(up.localPort);
          }
          if (!via || head.kind === "http") {
            clearTimeout(timer);
            // Plain HTTP through the host's proxy: its answer is the request's, looked at first.
            if (via) up.data.peek = "";
            this.established(client, up);
            return;
          }
          // The name, not the address: the host's proxy resolves it on its side of the network.
          pending = up;
          up.data.chain = "";
          up.write(connectLine(head, via));
        },
        data: (up, d) => {
          if (up.data.peek !== null) {
            const text = up.data.peek + d.toString("latin1");
            const { status, end } = statusOf(text);
            if (end < 0 && text.length <= CHAIN_HEAD_MAX) {
              up.data.peek = text;
              return;
            }
            up.data.peek = null;
            // Refused before the upstream ends: its close would end the client first (finish ends it).
            if (status === "407") {
              this.refuse(client, {
                status: 502,
                why: `the host's proxy ${via!.shown} answered 407 to ${head.kind === "http" ? head.method : "CONNECT"} http://${head.host}:${head.port}`,
                remedy: "the host proxy's user and password (HTTP_PROXY) were refused",
              });
              return;
            }
            d = Buffer.from(text, "latin1");
          } else if (up.data.chain !== null) {
            const text = up.data.chain + d.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            if (end < 0 && text.length <= CHAIN_HEAD_MAX) {
              up.data.chain = text;
              return;
            }
            clearTimeout(timer);
            const status = statusOf(text).status;
            if (end < 0 || status !== "200") {
              up.data.chain = null;
              up.end();
              this.refuse(client, {
                status: 502,
                why: `the host's proxy ${via!.shown} answered ${status ?? "something that is not HTTP"} to CONNECT ${head.host}:${head.port}`,
                remedy: status === "407" ? "the host proxy's user and password (HTTPS_PROXY) were refused" : "ask whoever runs that proxy",
              });
              return;
            }
            up.data.chain = null;
            pending = undefined;
            this.established(client, up);
            const rest = Buffer.from(text.slice(end + 4), "latin1");
            if (!rest.length) return;
            d = rest;
          }
          c.bytesIn += d.length;
          if (!pass(client, c.toClient, d)) up.pause();
        },
        drain: (up) => {
          if (up.data.chain !== null) return;
          if (flush(up, c.toUp)) {
            client.resume();
            if (c.clientEnded) up.end();
          }
        },
        end: () => this.upEnd(client),
        close: () => this.upEnd(client),
        error: () => this.upEnd(client),
        connectError: (_u, e) => unreachable(e as Error),
      },
    }).catch((e: Error) => unreachable(e));
  }

  /** The upstream is there (directly, or through the host's proxy): the tunnel opens. */
  private established(client: Socket<Conn>, up: Socket<Up>): void {
    const c = client.data;
    // The client left while the host's proxy was still answering a CONNECT: finished already.
    if (c.phase === "closed") {
      up.end();
      return;
    }
    c.up = up;
    c.phase = "open";
    c.status = 200;
    if (c.head!.kind === "connect") {
      c.bytesIn += 39;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    }
    if (!flush(up, c.toUp)) client.pause();
    else client.resume();
    if (c.clientEnded && !c.toUp.length) up.end();
  }

  /** The upstream is done: the client gets what is queued, then the end. */
  private upEnd(client: Socket<Conn>): void {
    const c = client.data;
    if (c.phase === "closed") return;
    if (flush(client, c.toClient)) client.end();
    else setTimeout(() => client.end(), 0);
    this.finish(client);
  }

  private clientEnd(s: Socket<Conn>): void {
    const c = s.data;
    c.clientEnded = true;
    if (c.up && !c.toUp.length) c.up.end();
  }

  private closed(s: Socket<Conn>): void {
    const c = s.data;
    if (!c) return;
    if (c.up && c.phase !== "closed") c.up.end();
    this.finish(s);
  }

  /** Once per connection: counts go back, the row is recorded. */
  private finish(s: Socket<Conn>): void {
    const c = s.data;
    if (c.phase === "closed") return;
    c.phase = "closed";
    clearTimeout(c.timer);
    const n = (this.perSource.get(c.src) ?? 1) - 1;
    if (n > 0) this.perSource.set(c.src, n);
    else this.perSource.delete(c.src);
    this.open--;
    if (c.up) c.up.end();
    if (c.brokered?.localPort != null) {
      const { b, localPort } = c.brokered;
      // The terminator may still be answering the last request: forgotten a little later.
      setTimeout(() => b.close(localPort), 5_000);
    }
    const h = c.head;
    this.hooks.done({
      src: c.src,
      at: c.at,
      method: h ? (h.kind === "connect" ? "CONNECT" : h.method) : "-",
      host: h?.host ?? "-",
      port: h?.port ?? 0,
      path: h
        ? h.kind === "connect"
          ? `${h.host}:${h.port}`
          : `http://${h.host}${h.port === 80 ? "" : `:${h.port}`}${h.path.replace(/\?.*$/s, "?…")}`
        : "-",
      status: c.status,
      durationMs: Date.now() - c.at,
      bytesIn: c.bytesIn,
      bytesOut: c.bytesOut,
      note: c.note,
    });
  }
}
