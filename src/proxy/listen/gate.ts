/**
 * What a container can make a proxy thread hold, bounded (issue 17): the agent is hostile, and
 * the daemon's memory, its file descriptors and its log are shared with the API and every
 * other task.
 *
 * - A request body is at most MAX_BODY bytes whatever its framing: a declared length over it is
 *   refused before a byte is kept, a chunked body is counted as it arrives and refused the
 *   moment it passes the bound, before anything goes upstream. The rest of such a body is read
 *   and thrown away while the 413 goes out: closing a socket with unread bytes resets it, and
 *   the reset can overtake the 413 (a quarter of the agents lost it that way, four 120 MiB
 *   uploads at once).
 * - A request must arrive whole within the listener's idle timeout (IDLE_SECONDS): Bun cuts a
 *   connection whose head stalls, and its timer is not reset by body bytes, so a body that
 *   trickles is cut too. Only once the body is read does the request get no deadline (`think`):
 *   the model's own thinking time stays unlimited. The timeout sticks to the connection, so it
 *   is put back when the answer is done (`Pass.release`), or an idle keep-alive connection would
 *   be held for ever.
 * - Requests in flight (admitted until their answer is done) are capped per thread, and per
 *   source address: over the cap the answer is 429 and the connection closes, so one container
 *   cannot take the daemon to its open-file limit. Reading a request's address costs ~1 µs, so
 *   addresses are counted only once the thread is busy (more than ATTRIBUTE_FROM in flight);
 *   a source therefore holds at most ATTRIBUTE_FROM + PER_SOURCE.
 * - After a large body the thread's heap is collected, so the memory goes back to the system
 *   (see cli/client.ts on the allocator's purge delay).
 */
import type { Server } from "bun";

/** Anthropic's own request limit. */
export const MAX_BODY = 32 * 1024 * 1024;
/** The listener's idle timeout: for a request's head and body, and an idle keep-alive connection. */
export const IDLE_SECONDS = 10;
/**
 * Bun's own bound (maxRequestBodySize), for every framing. Well above ours: a body past ours is
 * read on and thrown away after the 413 (`discard`), and Bun cuts that off here.
 */
export const SERVER_MAX_BODY = 4 * MAX_BODY;
const PER_SOURCE = 256;
const TOTAL = 2048;
const ATTRIBUTE_FROM = 64;
/** A body this big asks for a collection once its request is done. */
const LARGE = 1024 * 1024;
const COLLECT_AFTER_MS = 1000;

/** A request body as read under the bound, or why it was not. */
export type Body =
  | { ok: true; bytes: Uint8Array | undefined }
  | { ok: false; status: 413; declared: number | undefined }
  | { ok: false; status: 499; why: string };

/** One admitted request: released (once) when its answer is done. */
export class Pass {
  private thinking = false;
  private done = false;
  /** The answer is a stream that releases the pass when it ends (else the handler's return does). */
  held = false;
  large = false;

  constructor(
    private gate: Gate,
    private req: Request,
    private server: Server<undefined>,
    readonly source: string | undefined,
  ) {}

  /** The request is whole: from here the model may think as long as it likes. */
  think(): void {
    this.thinking = true;
    this.server.timeout(this.req, 0);
  }

  release(): void {
    if (this.done) return;
    this.done = true;
    // The timeout sticks to the connection: give the keep-alive connection its idle cut back.
    if (this.thinking) this.server.timeout(this.req, IDLE_SECONDS);
    this.gate.leave(this);
  }
}

export class Gate {
  private inFlight = 0;
  private bySource = new Map<string, number>();
  private collectTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private limits = { perSource: PER_SOURCE, total: TOTAL, attributeFrom: ATTRIBUTE_FROM }) {}

  /** A pass for this request, or why not: the thread's or the source's cap is reached. */
  admit(req: Request, server: Server<undefined>): Pass | { refused: string } {
    if (this.inFlight >= this.limits.total) return { refused: `this proxy thread has ${this.inFlight} requests in flight, its cap` };
    let source: string | undefined;
    if (this.inFlight >= this.limits.attributeFrom) {
      source = server.requestIP(req)?.address ?? "unknown";
      const n = this.bySource.get(source) ?? 0;
      if (n >= this.limits.perSource)
        return { refused: `${source.replace(/^::ffff:/, "")} has ${n} requests in flight on this proxy thread, its cap` };
      this.bySource.set(source, n + 1);
    }
    this.inFlight++;
    return new Pass(this, req, server, source);
  }

  /** For Pass.release only. */
  leave(pass: Pass): void {
    this.inFlight--;
    if (pass.source !== undefined) {
      const n = (this.bySource.get(pass.source) ?? 1) - 1;
      if (n <= 0) this.bySource.delete(pass.source);
      else this.bySource.set(pass.source, n);
    }
    if (pass.large) this.collectSoon();
  }

  /**
   * Collect this thread's heap shortly after large bodies are done: their buffers are garbage
   * the collector may not look at for a long time on a quiet proxy, and freed they go back to
   * the system. One collection for a burst of them.
   */
  private collectSoon(): void {
    if (this.collectTimer) clearTimeout(this.collectTimer);
    this.collectTimer = setTimeout(() => {
      this.collectTimer = undefined;
      try {
        Bun.gc(true);
      } catch {} // on a Worker an exception from a timer would stop the thread
    }, COLLECT_AFTER_MS);
    this.collectTimer.unref?.();
  }
}

/**
 * The body, read whole under MAX_BODY; then the request may think (Pass.think). A body whose
 * connection was cut (a stall past the idle timeout, the agent leaving) is a 499.
 */
export async function readBody(req: Request, pass: Pass): Promise<Body> {
  if (req.method === "GET" || req.method === "HEAD") {
    pass.think();
    return { ok: true, bytes: undefined };
  }
  const declared = req.headers.get("content-length");
  let bytes: Uint8Array;
  if (declared !== null) {
    // The common case, and the cheap one: Bun reads exactly the declared length.
    const n = Number(declared);
    if (n > MAX_BODY) {
      dropBody(req, pass);
      return { ok: false, status: 413, declared: n };
    }
    try {
      bytes = new Uint8Array(await req.arrayBuffer());
    } catch (e) {
      return { ok: false, status: 499, why: cut(e) };
    }
  } else {
    const read = await readAtMost(req, MAX_BODY, pass);
    if (read === "over") {
      pass.large = true;
      return { ok: false, status: 413, declared: undefined };
    }
    if (typeof read === "string") return { ok: false, status: 499, why: read };
    bytes = read;
  }
  if (bytes.length >= LARGE) pass.large = true;
  pass.think();
  return { ok: true, bytes };
}

/**
 * A streamed body (the Cursor route's agent stream) under the same bound: it errors past
 * MAX_BODY, and the request may think once it has ended.
 */
export function bounded(src: ReadableStream<Uint8Array>, pass: Pass): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      const { done, value } = await reader.read();
      if (done) {
        pass.think();
        return ctrl.close();
      }
      size += value.length;
      if (size > MAX_BODY) {
        void reader.cancel().catch(() => {});
        return ctrl.error(new Error(`the request body passed lazy's limit of ${MAX_BODY} bytes`));
      }
      ctrl.enqueue(value);
    },
    cancel: (reason) => void reader.cancel(reason).catch(() => {}),
  });
}

/** The 429 for a request over the cap; the connection closes so the slot is freed at once. */
export function tooMany(why: string): Response {
  return Response.json(
    {
      type: "error",
      error: { type: "rate_limit_error", message: `lazy's proxy refused the request: ${why}. Wait for earlier requests to finish.` },
    },
    { status: 429, headers: { connection: "close", "retry-after": "1", "x-should-retry": "true" } },
  );
}

/**
 * The body, or "over" past `max` bytes (the rest is discarded), or why its connection was cut.
 * Counted as it arrives, whatever the framing: nothing past `max` is kept.
 */
export async function readAtMost(req: Request, max: number, pass: Pass): Promise<Uint8Array | "over" | string> {
  if (!req.body) return new Uint8Array(0);
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let next: Awaited<ReturnType<typeof reader.read>>;
    try {
      next = await reader.read();
    } catch (e) {
      return cut(e);
    }
    if (next.done) break;
    size += next.value.length;
    if (size > max) {
      parts.length = 0;
      discard(reader, pass);
      return "over";
    }
    parts.push(next.value);
  }
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * Read the rest of a refused body and throw it away, so the connection closes cleanly after the
 * 413 (see the top). Bounded by Bun: the idle timeout, which body bytes do not reset, and
 * SERVER_MAX_BODY. The request stays in flight (its pass held) until then.
 */
export function discard(reader: ReadableStreamDefaultReader<Uint8Array>, pass: Pass): void {
  pass.held = true;
  // What was read is garbage: have it collected once the burst is done (Gate.collectSoon).
  pass.large = true;
  void (async () => {
    try {
      for (;;) if ((await reader.read()).done) break;
    } catch {} // cut by Bun: that is the bound
    pass.release();
  })();
}

/** Throw away whatever body the request has (discard), for a request refused before its body was read. */
export function dropBody(req: Request, pass: Pass): void {
  if (req.body) discard(req.body.getReader(), pass);
}

function cut(e: unknown): string {
  const m = (e as Error)?.message ?? String(e);
  return /closed|abort/i.test(m)
    ? "the agent's connection closed before its request body was whole (it stalled past the idle timeout, or the agent left)"
    : `reading the request body failed: ${m}`;
}
