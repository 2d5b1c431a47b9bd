/**
 * One request and its response on an upstream connection (http1.ts): the wait for the
 * response head, with its deadline and the agent's disconnect, then the body as it arrives,
 * handed over whole or as a stream that pauses the socket while the agent does not read.
 * First-byte deadlines come from one sweep for all exchanges.
 */
import { NetError } from "./failures";

/** The subset of a Response the proxy uses, from either this client or fetch. */
export interface UpstreamResponse {
  status: number;
  statusText: string;
  /** 2xx */
  ok: boolean;
  /** The response's end-to-end headers (hop-by-hop and content-length left out). */
  headers: Headers;
  /** The declared content-length, if any. */
  length: number | undefined;
  /** Whether a body follows (false for HEAD, 204, 304, and an empty content-length). */
  hasBody: boolean;
  /** The whole body (only before `stream()` is taken). */
  bytes(): Promise<Uint8Array<ArrayBuffer>>;
  /** The body as a stream, pulled on demand. */
  stream(): ReadableStream<Uint8Array>;
  /** Drop the body and the connection under it. */
  cancel(): void;
}

/**
 * What an exchange may ask of the connection carrying it: stop and start reading (backpressure
 * while the agent does not read), and drop it (a failure). The connection itself (http1.ts)
 * completes the exchange when the response is whole.
 */
export interface Carrier {
  pause(): void;
  resume(): void;
  destroy(): void;
}

/** Queued response bytes the agent has not read yet before the upstream socket pauses. */
const PAUSE_AT = 256 * 1024;

/**
 * First-byte deadlines without a timer per request: one sweep every 250 ms fails the waits
 * that ran out. An exchange whose headers arrived drops out of the set. The sweep also starts
 * listening for the agent's disconnect on the waits it finds (Exchange.listen).
 */
const waiting = new Set<Exchange>();
let sweeper: Timer | undefined;
function watch(ex: Exchange) {
  waiting.add(ex);
  sweeper ??= setInterval(() => {
    const now = performance.now();
    for (const w of waiting) {
      if (w.deadline <= now) w.fail(new NetError("ETIMEDOUT", "no response headers in time"));
      else w.listen();
    }
    if (!waiting.size) {
      clearInterval(sweeper);
      sweeper = undefined;
    }
  }, 250);
}

function abortError(): Error {
  const e = new Error("The operation was aborted");
  e.name = "AbortError";
  return e;
}

/** One request/response on a connection, and the response's body as it arrives. */
export class Exchange {
  /** The response head arrived. */
  headersDone = false;
  /** Done, whole or failed: nothing more happens to it. */
  finished = false;
  /** The connection carrying it, until the response is whole (then it carries the next one). */
  private carrier: Carrier | undefined;
  // The body: collected for bytes(), or queued for stream().
  private chunks: Uint8Array[] = [];
  private queued = 0;
  private ended = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;
  private streaming = false;
  /** Stops listening for the agent's disconnect, once `listen` has started. */
  private unlisten: (() => void) | undefined;

  constructor(
    readonly method: string,
    /** The request's bytes, head and body: sent again when a reused connection turns out closed. */
    readonly payload: Buffer,
    private resolveHead: (r: UpstreamResponse) => void,
    private rejectHead: (e: Error) => void,
    /** The agent's request's signal, asked for only by `listen`. */
    private agent: () => AbortSignal,
    readonly deadline: number,
  ) {
    watch(this);
  }

  /** A connection takes this exchange on (a new one, or the retry's after a pooled one closed). */
  attach(carrier: Carrier) {
    this.carrier = carrier;
  }

  /**
   * Fail the wait for headers when the agent disconnects, from the first sweep on (≤ 250 ms).
   * Most answers come before that and never pay for the signal: Bun makes a request's
   * AbortSignal when it is first read, and reading it, adding a listener and removing it cost
   * ~2.4 µs a request in a bare Bun.serve (bench/README.md). A signal read late still reports
   * an abort that came before it was read.
   */
  listen() {
    if (this.unlisten || this.finished) return;
    const signal = this.agent();
    if (signal.aborted) return this.fail(abortError());
    const onAbort = () => this.fail(abortError());
    signal.addEventListener("abort", onAbort, { once: true });
    this.unlisten = () => signal.removeEventListener("abort", onAbort);
  }

  /**
   * Whether the agent's request was given up before a byte of it went upstream: Bun aborts a
   * pending request when its connection gets pipelined bytes or a FIN, and never answers it, so
   * it must not be sent (and billed). Fails the exchange if so. Asked once, just before the
   * first write: by then Bun has read what came with the request.
   */
  abandoned(): boolean {
    if (!this.agent().aborted) return false;
    this.fail(abortError());
    return true;
  }

  headers(status: number, statusText: string, headers: Headers, length: number | undefined, hasBody: boolean) {
    this.headersDone = true;
    waiting.delete(this);
    // From here on the signal is the caller's business: it cancels the body it took.
    this.unlisten?.();
    if (!hasBody) this.ended = true;
    this.resolveHead({
      status,
      statusText,
      ok: status >= 200 && status < 300,
      headers,
      length,
      hasBody,
      bytes: () => this.whole(),
      stream: () => this.toStream(),
      cancel: () => this.drop(),
    });
  }

  data(chunk: Uint8Array) {
    this.chunks.push(chunk);
    this.queued += chunk.length;
    if (this.streaming && this.queued >= PAUSE_AT) this.carrier?.pause();
    this.poke();
  }

  /** The response is whole. The connection is no longer this exchange's to pause or resume: it may carry the next one. */
  complete() {
    this.finished = true;
    this.carrier = undefined;
    this.ended = true;
    this.poke();
  }

  /** A failure: before the headers it rejects the request; after, it breaks the body. */
  fail(e: Error) {
    if (this.finished) return;
    this.finished = true;
    waiting.delete(this);
    this.unlisten?.();
    this.carrier?.destroy();
    if (!this.headersDone) return this.rejectHead(e);
    this.error = e;
    this.poke();
  }

  private poke() {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private drop() {
    if (this.ended && this.chunks.length === 0) return;
    this.chunks = [];
    this.fail(new NetError("ABORT_ERR", "the body was dropped"));
  }

  private async whole(): Promise<Uint8Array<ArrayBuffer>> {
    while (!this.ended && !this.error) await new Promise<void>((r) => (this.wake = r));
    if (this.error) throw this.error;
    const parts = this.chunks;
    this.chunks = [];
    return (parts.length === 1 ? parts[0]! : Buffer.concat(parts)) as Uint8Array<ArrayBuffer>;
  }

  private toStream(): ReadableStream<Uint8Array> {
    this.streaming = true;
    if (this.queued >= PAUSE_AT) this.carrier?.pause();
    return new ReadableStream<Uint8Array>(
      {
        pull: async (ctrl) => {
          while (!this.chunks.length && !this.ended && !this.error) await new Promise<void>((r) => (this.wake = r));
          const chunk = this.chunks.shift();
          if (chunk) {
            this.queued -= chunk.length;
            if (this.queued < PAUSE_AT) this.carrier?.resume();
            ctrl.enqueue(chunk);
            return;
          }
          if (this.error) ctrl.error(this.error);
          else ctrl.close();
        },
        cancel: () => this.drop(),
      },
      { highWaterMark: 0 },
    );
  }
}
