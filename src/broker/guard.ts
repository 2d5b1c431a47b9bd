/**
 * An answer from a brokered host must not carry the real secret back into the container (a
 * service that echoes the request's headers, a debug endpoint, a redirect with the token in its
 * query): its headers are checked, and its body passes through a stream that holds back the
 * last (longest form − 1) bytes of each chunk, so a secret cut across two chunks is whole
 * before any of it is passed on. On a hit the answer is cut there, and the caller is told.
 * The forms are the secret as is and encoded (egress/canary.ts: base64 at three offsets, hex,
 * reversed).
 */
export function carries(text: string, forms: readonly string[]): boolean {
  return forms.some((f) => text.includes(f));
}

export function guarded(body: ReadableStream<Uint8Array>, forms: readonly string[], onHit: () => void): ReadableStream<Uint8Array> {
  const needles = forms.map((f) => Buffer.from(f, "latin1"));
  const keep = Math.max(0, ...needles.map((n) => n.length)) - 1;
  let tail: Buffer = Buffer.alloc(0);
  let hit = false;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        if (hit) return;
        const buf = tail.length ? Buffer.concat([tail, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        if (needles.some((n) => buf.indexOf(n) >= 0)) {
          hit = true;
          onHit();
          ctl.error(new Error("the answer carried the service's real token: lazy cut it"));
          return;
        }
        const cut = Math.max(0, buf.length - keep);
        if (cut) ctl.enqueue(Uint8Array.prototype.slice.call(buf, 0, cut) as Uint8Array);
        tail = Buffer.from(buf.subarray(cut));
      },
      flush(ctl) {
        if (!hit && tail.length) ctl.enqueue(new Uint8Array(tail));
      },
    }),
  );
}
