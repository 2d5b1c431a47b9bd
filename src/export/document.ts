/**
 * The bundle as the daemon answers it: the JSON text `serialize` gives (index.ts), made and sent a
 * slice at a time. The parts are tens of MiB of strings; escaped in one go they would hold the
 * daemon's thread for hundreds of milliseconds, and here each slice waits for the reader.
 */
import { type Bundle, cutAt } from "./bundle";

/** Characters of a part escaped at a time. */
const SLICE = 1024 * 1024;

/** What `JSON.stringify(b, null, 2) + "\n"` gives, in pieces, the parts' strings escaped a slice at a time. */
function* pieces(b: Bundle): Generator<string> {
  // `parts` is the document's last key: what comes before it is small.
  const head = JSON.stringify({ ...b, parts: null }, null, 2);
  yield head.slice(0, head.length - "null\n}".length);
  const names = Object.keys(b.parts);
  if (!names.length) {
    yield "{}\n}\n";
    return;
  }
  yield "{";
  for (const [i, name] of names.entries()) {
    const text = b.parts[name]!;
    yield `${i ? "," : ""}\n    ${JSON.stringify(name)}: "`;
    // Escaping is per character, so the slices' escapes joined are the whole string's (a surrogate pair is never parted).
    for (let at = 0; at < text.length; ) {
      const end = cutAt(text, Math.min(text.length, at + SLICE));
      yield JSON.stringify(text.slice(at, end)).slice(1, -1);
      at = end;
    }
    yield '"';
  }
  yield "\n  }\n}\n";
}

/** The bundle's JSON text as a stream of UTF-8 bytes: the next slice is made when the reader asks for it. */
export function streamed(b: Bundle): ReadableStream<Uint8Array> {
  const it = pieces(b);
  return new ReadableStream<Uint8Array>({
    pull(ctrl) {
      const next = it.next();
      if (next.done) ctrl.close();
      else ctrl.enqueue(Buffer.from(next.value, "utf8"));
    },
  });
}
