/**
 * Scrubbing real credentials out of what Cursor answers, before it reaches a container. The real
 * key (and the real session tokens) went upstream in a header or the key exchange's `apiKey`;
 * an upstream that echoes them (an error quoting the Authorization header, a debug field) must
 * not hand them to the agent. Each occurrence is replaced:
 *
 * - in a text answer (JSON, text/*): by the placeholder it stands for, so the agent sees what it
 *   sent;
 * - in anything else (Connect/protobuf): by `*`s of the same length, because those bodies carry
 *   length prefixes that a longer or shorter stand-in would corrupt.
 *
 * A stream is scrubbed chunk by chunk. A chunk that ends with the start of a secret holds that
 * start back until the next chunk shows whether the secret follows. If the upstream then pauses
 * (HOLD_MS), the held bytes go out as they are: a Connect stream waits on the client after a
 * frame, and holding the frame's last bytes would hang both sides. Only a secret split across
 * such a pause gets through, and then only in part.
 */

const HOLD_MS = 200;
const STAR = 0x2a;

export class Scrubber {
  readonly #pairs: { real: Buffer; stand: Buffer }[];
  #held: Buffer = Buffer.alloc(0);
  #replaced = 0;

  /** `pairs`: real credential → the placeholder that stands for it. `text`: the answer is text. */
  constructor(pairs: readonly (readonly [real: string, placeholder: string])[], text: boolean) {
    this.#pairs = pairs
      .filter(([real]) => real.length > 0)
      .map(([real, ph]) => {
        const r = Buffer.from(real);
        return { real: r, stand: text ? Buffer.from(ph) : Buffer.alloc(r.length, STAR) };
      });
  }

  /** Whether the answer's content type is text, where a placeholder of another length is harmless. */
  static isText(contentType: string | null): boolean {
    return /^\s*(text\/|application\/(json|problem\+json)\s*(;|$))/i.test(contentType ?? "");
  }

  /** A whole body, scrubbed. The same bytes come back when nothing was found. */
  all<T extends Uint8Array>(bytes: T): T | Buffer<ArrayBuffer> {
    return this.#replace(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)) ?? bytes;
  }

  /** How many secrets were replaced so far: worth an audit note, since it should never happen. */
  get replaced(): number {
    return this.#replaced;
  }

  get holding(): boolean {
    return this.#held.length > 0;
  }

  /** The next chunk of a stream: what may go out now (the start of a possible secret is held). */
  push(chunk: Uint8Array): Uint8Array {
    const whole = this.#held.length ? Buffer.concat([this.#held, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    const buf = this.#replace(whole) ?? whole;
    const keep = this.#partial(buf);
    this.#held = Buffer.from(buf.subarray(buf.length - keep));
    return buf.subarray(0, buf.length - keep);
  }

  /** What is held back, released (the stream ended or paused): no whole secret is in it. */
  flush(): Uint8Array {
    const out = this.#held;
    this.#held = Buffer.alloc(0);
    return out;
  }

  /** `buf` with every secret replaced, or null when it holds none. */
  #replace(buf: Buffer): Buffer<ArrayBuffer> | null {
    let out: Buffer<ArrayBuffer> | null = null;
    for (const { real, stand } of this.#pairs) {
      const src: Buffer = out ?? buf;
      let at = src.indexOf(real);
      if (at === -1) continue;
      const parts: Buffer[] = [];
      let from = 0;
      while (at !== -1) {
        parts.push(src.subarray(from, at), stand);
        this.#replaced++;
        from = at + real.length;
        at = src.indexOf(real, from);
      }
      parts.push(src.subarray(from));
      out = Buffer.concat(parts);
    }
    return out;
  }

  /** The length of the longest tail of `buf` that is the start of a secret (but not all of it). */
  #partial(buf: Buffer): number {
    let best = 0;
    for (const { real } of this.#pairs) {
      const first = real[0]!;
      const lowest = Math.max(0, buf.length - real.length + 1);
      for (let i = buf.lastIndexOf(first); i >= lowest; i = i > 0 ? buf.lastIndexOf(first, i - 1) : -1) {
        const k = buf.length - i;
        if (k > best && buf.subarray(i).equals(real.subarray(0, k))) best = k;
      }
    }
    return best;
  }
}

/** `src` with every secret scrubbed out, pulled on demand (backpressure holds). */
export function scrubStream(src: ReadableStream<Uint8Array>, scrubber: Scrubber, holdMs = HOLD_MS): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  type Read = Awaited<ReturnType<typeof reader.read>>;
  let pending: Promise<Read> | null = null;
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctrl) {
        for (;;) {
          const reading: Promise<Read> = pending ?? reader.read();
          // Awaited later, perhaps after a pause flush: not an unhandled rejection meanwhile.
          if (!pending) reading.catch(() => {});
          pending = reading;
          let r: Read;
          if (scrubber.holding) {
            let timer: ReturnType<typeof setTimeout> | undefined;
            const paused = new Promise<null>((resolve) => (timer = setTimeout(resolve, holdMs, null)));
            const first = await Promise.race([reading, paused]);
            clearTimeout(timer);
            if (first === null) {
              ctrl.enqueue(scrubber.flush());
              return;
            }
            r = first;
          } else r = await reading;
          pending = null;
          if (r.done) {
            const tail = scrubber.flush();
            if (tail.length) ctrl.enqueue(tail);
            ctrl.close();
            return;
          }
          const out = scrubber.push(r.value);
          if (out.length) {
            ctrl.enqueue(out);
            return;
          }
        }
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
