/**
 * The scrubber the Cursor route runs over answers: every real credential out, whatever the
 * chunking, and no stream held hostage by a chunk that merely ends like the start of one.
 */
import { describe, expect, test } from "bun:test";
import { Scrubber, scrubStream } from "../../src/proxy/request/cursor-scrub";
import { until } from "../helpers/lazy";

const KEY = "crsr_REAL" + "k".repeat(56);
const PH = "key_lazy_" + "0".repeat(64);
const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJyZWFsIjp0cnVlfQ.c2lnbmF0dXJl";
const SESSION_PH = "eyJhbGciOiJIUzI1NiJ9.eyJsYXp5IjoicGxhY2Vob2xkZXIifQ.cGg";
const PAIRS: [string, string][] = [
  [KEY, PH],
  [JWT, SESSION_PH],
];
const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A source that yields `chunks`. */
function source(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      if (i >= chunks.length) return ctrl.close();
      ctrl.enqueue(chunks[i++]!);
    },
  });
}

async function collect(s: ReadableStream<Uint8Array>): Promise<{ text: string }> {
  let text = "";
  for await (const c of s) text += dec(c);
  return { text };
}

describe("Scrubber", () => {
  test("a whole text answer gets the placeholders; one without a secret comes back as the same bytes", () => {
    const s = new Scrubber(PAIRS, true);
    expect(dec(s.all(enc(`{"error":"bad key ${KEY}","auth":"Bearer ${JWT}","again":"${KEY}"}`)))).toBe(
      `{"error":"bad key ${PH}","auth":"Bearer ${SESSION_PH}","again":"${PH}"}`,
    );
    const clean = enc(`{"ok":"${PH}"}`);
    expect(s.all(clean)).toBe(clean);
  });

  test("a binary answer gets stars of the secret's own length, so length prefixes stay true", () => {
    const s = new Scrubber(PAIRS, false);
    const out = dec(s.all(enc(`\x00\x00\x00\x00\x4aBearer ${JWT}`)));
    expect(out).toBe(`\x00\x00\x00\x00\x4aBearer ${"*".repeat(JWT.length)}`);
    expect(Scrubber.isText("application/json; charset=utf-8")).toBe(true);
    expect(Scrubber.isText("text/plain")).toBe(true);
    for (const t of ["application/connect+proto", "application/connect+json", "application/proto", null])
      expect(Scrubber.isText(t)).toBe(false);
  });

  test("a stream: a secret cut at any point between two chunks never gets through", async () => {
    const body = `data: one ${KEY} two ${JWT} three`;
    const expected = `data: one ${PH} two ${SESSION_PH} three`;
    for (let cut = 1; cut < body.length; cut++) {
      const { text } = await collect(scrubStream(source([enc(body.slice(0, cut)), enc(body.slice(cut))]), new Scrubber(PAIRS, true)));
      expect(text).toBe(expected);
    }
    // One byte a chunk: the worst case for a held tail.
    const { text } = await collect(scrubStream(source([...body].map(enc)), new Scrubber(PAIRS, true)));
    expect(text).toBe(expected);
  });

  test("a chunk that ends like the start of a secret is released when the upstream pauses, not held until its next chunk", async () => {
    // A frame that ends in "ey" (a JWT starts "eyJ"), then the upstream waits on the client: its
    // next chunk comes only once the client has the whole frame.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const chunks = [enc("frame ends ey"), enc(" later")];
    let i = 0;
    const upstream = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        if (i === 1) await gate;
        if (i >= chunks.length) return ctrl.close();
        ctrl.enqueue(chunks[i++]!);
      },
    });
    let text = "";
    const reading = (async () => {
      for await (const c of scrubStream(upstream, new Scrubber(PAIRS, true), 50)) text += dec(c);
    })();
    await until(() => text === "frame ends ey", 10_000, "the frame's tail released while the upstream waits");
    release();
    await reading;
    expect(text).toBe("frame ends ey later");
  });

  test("cancelling the scrubbed stream cancels the source", async () => {
    let cancelled = false;
    const src = new ReadableStream<Uint8Array>({
      pull: (c) => c.enqueue(enc("x")),
      cancel: () => {
        cancelled = true;
      },
    });
    const reader = scrubStream(src, new Scrubber(PAIRS, true)).getReader();
    await reader.read();
    await reader.cancel();
    expect(cancelled).toBe(true);
  });
});
