/**
 * A company's forward proxy on loopback, for tests of lazy behind one: it takes absolute-form
 * plain-HTTP requests (`GET http://127.0.0.1:PORT/path HTTP/1.1`) with a user and password,
 * refuses CONNECT to port 80 as many company proxies do, and reaches only 127.0.0.1 (one
 * request a connection: it asks the upstream to close after its answer). Every byte
 * each connection sent it is kept, so a test can say what the company saw.
 */
import type { Socket } from "bun";

export interface CompanyProxy {
  /** http://user:password@127.0.0.1:port */
  url: string;
  /** What each connection sent, as latin1 text, in arrival order. */
  received: string[];
  /** The request lines it was asked (one a request head it read). */
  lines: string[];
  stop(): void;
}

/** `names`: host names it resolves on its side (this host cannot), each to a port on 127.0.0.1. */
export function companyProxy(user: string, password: string, names: Record<string, number> = {}): CompanyProxy {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const received: string[] = [];
  const lines: string[] = [];
  type Conn = { i: number; buf: string; up?: Socket<unknown>; pending: string[] };
  const listener = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (s) => {
        s.data = { i: received.push("") - 1, buf: "", pending: [] };
      },
      data: (s, d) => {
        const text = d.toString("latin1");
        received[s.data.i] += text;
        if (s.data.up) return void s.data.up.write(d);
        s.data.buf += text;
        const end = s.data.buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = s.data.buf.slice(0, end);
        const line = head.split("\r\n")[0]!;
        lines.push(line);
        if (/proxy-authorization: ([^\r]*)/i.exec(head)?.[1] !== expected)
          return void s.end("HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        if (line.startsWith("CONNECT "))
          return void s.end("HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        const m = /^(\S+) http:\/\/([^/:\s]+)(?::(\d+))?(\S*) (HTTP\/1\.[01])$/.exec(line);
        const port = m ? (m[2] === "127.0.0.1" ? Number(m[3]) : names[m[2]!]) : undefined;
        if (!m || !port) return void s.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        const rest = head
          .split("\r\n")
          .slice(1)
          .filter((l) => !/^(proxy-|connection:|keep-alive:)/i.test(l));
        // One request a connection: the upstream closes after its answer, and so does this one.
        const out = `${m[1]} ${m[4] || "/"} ${m[5]}\r\n${rest.join("\r\n")}\r\nConnection: close\r\n\r\n${s.data.buf.slice(end + 4)}`;
        void Bun.connect({
          hostname: "127.0.0.1",
          port,
          socket: {
            open: (u) => {
              s.data.up = u;
              u.write(Buffer.from(out, "latin1"));
            },
            data: (_u, x) => void s.write(x),
            close: () => void s.end(),
            error: () => void s.end(),
          },
        });
      },
      close: (s) => void s.data.up?.end(),
    },
  });
  return { url: `http://${user}:${password}@127.0.0.1:${listener.port}`, received, lines, stop: () => listener.stop(true) };
}

/** An event stream whose second event waits for `release()`: what a proxy streams shows before the answer ends. */
export function heldStream(first: string, second: string): { response: Response; release: () => void } {
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const enc = new TextEncoder();
  const body = new ReadableStream({
    async start(c) {
      c.enqueue(enc.encode(first));
      await held;
      c.enqueue(enc.encode(second));
      c.close();
    },
  });
  return { response: new Response(body, { headers: { "content-type": "text/event-stream" } }), release };
}
