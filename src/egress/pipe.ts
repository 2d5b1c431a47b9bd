/**
 * Bytes between two sockets with backpressure, for the egress proxy's listener (server.ts): a
 * side that cannot take more keeps the rest queued and the other side pauses; and the proxy's
 * own short plain-text answers.
 */
import type { Socket } from "bun";

const reasons: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  408: "Request Timeout",
  431: "Request Header Fields Too Large",
  429: "Too Many Requests",
  502: "Bad Gateway",
  504: "Gateway Timeout",
};

export function answer<T>(s: Socket<T>, status: number, body: string): void {
  const text = `${body}\n`;
  s.end(
    `HTTP/1.1 ${status} ${reasons[status] ?? "Error"}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
  );
}

/** Send `d` after what is queued (uncopied when nothing is); true when all of it was taken. */
export function pass(s: Socket<unknown> | undefined, queue: Buffer[], d: Buffer): boolean {
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
export function flush(s: Socket<unknown>, queue: Buffer[]): boolean {
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
