/**
 * The egress proxy's listener on one address (a project network's gateway, never 0.0.0.0) and
 * what it does with each connection: read one bounded head within a time bound (head.ts), ask
 * the policy and the leak check, dial, then pipe bytes both ways with backpressure (a side
 * that cannot take more pauses the other). Bun.listen/Bun.connect: Bun.serve cannot tunnel.
 */
import type { Socket, TCPSocketListener } from "bun";
import { headEnd, MAX_HEAD, parse, type Head } from "./head";

/** A head must arrive within this, or the connection is cut (408). */
export const HEAD_TIMEOUT_MS = 10_000;
/** How long a dial may take. */
const DIAL_TIMEOUT_MS = 10_000;
/** Open connections one source address may hold, and all sources together. */
export const PER_SOURCE = 64;
const TOTAL = 1024;

/** What the listener asks its owner (index.ts). */
export interface Hooks {
  /** Whether this source may use the proxy at all (the project's own network only). */
  admit(src: string): boolean;
  /** Allowed? If so, where to dial. */
  decide(src: string, head: Extract<Head, { kind: "connect" | "http" }>): Promise<{ address: string; via?: Via } | Refusal>;
  /** A placeholder in these bytes (head or plain-HTTP body), if any: the connection is refused. */
  leak(src: string, text: string): Refusal | null;
  /** The connection is over: one audit row. */
  done(c: Done): void;
}

/** The host's own proxy, which lazy's egress proxy chains behind (a CONNECT to it for every connection). */
export interface Via {
  host: string;
  port: number;
  /** The Proxy-Authorization value, if the host's proxy URL had a user. */
  auth: string | null;
  /** The proxy as it may be shown (no password). */
  shown: string;
}

export interface Refusal {
  status: number;
  why: string;
  remedy: string;
}

export interface Done {
  src: string;
  at: number;
  method: string;
  host: string;
  port: number;
  path: string;
  status: number;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  note: string | null;
}

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
  status: number;
  note: string | null;
}

interface Up {
  conn: Conn;
  client: Socket<Conn>;
  /** Chained: the host proxy's answer to lazy's CONNECT, until its head has arrived. */
  chain: string | null;
}

/** The host proxy's answer head is bounded like a client's. */
const CHAIN_HEAD_MAX = 8 * 1024;

const reasons: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  429: "Too Many Requests",
  502: "Bad Gateway",
  504: "Gateway Timeout",
};

function answer(s: Socket<Conn>, status: number, body: string): void {
  const text = `${body}\n`;
  s.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? "Error"}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

/** Send `d` after what is queued (uncopied when nothing is); true when all of it was taken. */
function pass(s: Socket<unknown> | undefined, queue: Buffer[], d: Buffer): boolean {
  if (!s || queue.length) {
    queue.push(Buffer.from(d));
    return s ? flush(s, queue) : false;
  }
  const n = s.write(d);
  if (n >= d.length) return true;
  queue.push(Buffer.from(d.subarray(Math.max(n, 0))));
  return false;
}

/** Write what is queued; true when all of it was taken. */
function flush(s: Socket<unknown>, queue: Buffer[]): boolean {
  while (queue.length) {
    const b = queue[0]!;
    const n = s.write(b);
    if (n < b.length) {
      queue[0] = b.subarray(Math.max(n, 0));
      return false;
    }
    queue.shift();
  }
  return true;
}

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
      status: 0,
      note: null,
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
      c.bytesOut += d.length;
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
    if (head.kind === "bad") {
      this.refuse(s, { status: head.status, why: head.why, remedy: "send CONNECT host:port, or an absolute http:// request" });
      return;
    }
    c.head = head;
    c.phase = "deciding";
    const rest = buf.subarray(end);
    c.chunks = [];
    const leak = this.hooks.leak(c.src, head.raw);
    if (leak) {
      this.refuse(s, leak);
      return;
    }
    if (head.kind === "http") {
      c.scanTail = "";
      c.toUp.push(Buffer.from(head.forward, "latin1"));
      if (rest.length && !this.scan(s, rest)) return;
    }
    c.bytesOut += rest.length;
    if (rest.length) c.toUp.push(Buffer.from(rest));
    void this.hooks.decide(c.src, head).then(
      (r) => {
        if (c.phase === "closed") return;
        if ("status" in r) this.refuse(s, r);
        else this.dial(s, r.address, r.via);
      },
      (e: unknown) =>
        this.refuse(s, { status: 502, why: `lazy's egress proxy failed: ${(e as Error).message}`, remedy: "see lazy daemon logs" }),
    );
  }

  /** Plain HTTP: refuse the connection when these bytes (with the last chunk's tail) carry a placeholder. */
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

  private dial(client: Socket<Conn>, address: string, via?: Via): void {
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
          ? "check HTTPS_PROXY in the daemon's environment (lazy daemon restart from a shell that has it right)"
          : "check the host and port",
      });
    };
    Bun.connect<Up>({
      hostname: via ? via.host : address,
      port: via ? via.port : head.port,
      data: { conn: c, client, chain: null },
      socket: {
        open: (up) => {
          if (c.phase === "closed") {
            clearTimeout(timer);
            up.end();
            return;
          }
          if (!via) {
            clearTimeout(timer);
            this.established(client, up);
            return;
          }
          // The name, not the address: the host's proxy resolves it on its side of the network.
          pending = up;
          up.data.chain = "";
          const target = `${head.host.includes(":") ? `[${head.host}]` : head.host}:${head.port}`;
          up.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n${via.auth ? `Proxy-Authorization: ${via.auth}\r\n` : ""}\r\n`);
        },
        data: (up, d) => {
          if (up.data.chain !== null) {
            const text = up.data.chain + d.toString("latin1");
            const end = text.indexOf("\r\n\r\n");
            if (end < 0 && text.length <= CHAIN_HEAD_MAX) {
              up.data.chain = text;
              return;
            }
            clearTimeout(timer);
            const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
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
