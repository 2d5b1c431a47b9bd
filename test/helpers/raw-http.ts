/**
 * HTTP/1.x bytes sent to a server over a bare TCP socket, for what fetch will not send:
 * pipelined requests, absolute-form targets, chunked bodies of any size, stalls, half-closes.
 * Everything the server sent back is collected until it closes, `waitMs` runs out, or (with
 * `responses`) that many whole responses (framed by content-length) have come.
 */
import { connect, type Socket } from "node:net";

export interface RawResult {
  /** What came back, as latin1 text. */
  data: string;
  /** The server closed the connection (rather than the wait running out). */
  closedByServer: boolean;
  /** Milliseconds from connecting to the close (or to the end of the wait). */
  ms: number;
  /** The status of each response found in `data`, in order. */
  statuses: number[];
}

export function raw(port: number, send: (s: Socket) => void | Promise<void>, waitMs = 10_000, responses = Infinity): Promise<RawResult> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const s = connect(port, "127.0.0.1");
    let data = "";
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      const statuses = [...data.matchAll(/HTTP\/1\.[01] (\d{3})/g)].map((m) => Number(m[1]));
      resolve({ data, closedByServer, ms: Date.now() - t0, statuses });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    s.on("data", (d) => {
      data += d.toString("latin1");
      if (whole(data) >= responses) finish(false);
    });
    s.on("error", () => {}); // a reset while we still write is the server closing: `close` follows
    s.on("close", () => finish(true));
    s.on("connect", () => void send(s));
  });
}

/** Write and wait for the socket to take it (false: the peer went away first). */
export function write(s: Socket, chunk: string | Uint8Array): Promise<boolean> {
  return new Promise((resolve) => {
    if (s.destroyed) return resolve(false);
    if (s.write(chunk)) return resolve(true);
    const onDrain = () => {
      s.off("close", onClose);
      resolve(true);
    };
    const onClose = () => {
      s.off("drain", onDrain);
      resolve(false);
    };
    s.once("drain", onDrain);
    s.once("close", onClose);
  });
}

/** A chunked body of `total` bytes in 1 MiB chunks, written with backpressure; stops when the peer goes. */
export async function chunkedBody(s: Socket, total: number): Promise<number> {
  const MiB = 1024 * 1024;
  const chunk = Buffer.concat([Buffer.from(`${MiB.toString(16)}\r\n`), Buffer.alloc(MiB, 97), Buffer.from("\r\n")]);
  let sent = 0;
  while (sent < total) {
    if (!(await write(s, chunk))) return sent;
    sent += MiB;
  }
  await write(s, "0\r\n\r\n");
  return sent;
}

/** How many whole responses (content-length framed) `data` holds. */
function whole(data: string): number {
  let n = 0;
  let at = 0;
  for (;;) {
    const end = data.indexOf("\r\n\r\n", at);
    if (end === -1) return n;
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(data.slice(at, end))?.[1] ?? 0);
    if (data.length < end + 4 + length) return n;
    n++;
    at = end + 4 + length;
  }
}
