/**
 * Relay an upstream body to the agent chunk by chunk (pulled on demand, so backpressure holds),
 * feeding a copy to a tap (the usage reader). An upstream that breaks mid-stream ends the
 * stream and is reported to `done`: once headers are sent, an error is data. The agent closing
 * cancels the upstream read, which closes the upstream connection.
 */
import { firstSentence } from "./failures";

export function relay(
  src: ReadableStream<Uint8Array>,
  tap: { push(chunk: Uint8Array): void } | null,
  done: (bytes: number, note: string | null) => void,
): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  let bytes = 0;
  let finished = false;
  const finish = (note: string | null) => {
    if (finished) return;
    finished = true;
    done(bytes, note);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(ctrl) {
        try {
          const { done: end, value } = await reader.read();
          if (end) {
            finish(null);
            ctrl.close();
            return;
          }
          bytes += value.length;
          tap?.push(value);
          ctrl.enqueue(value);
        } catch (e) {
          finish(`upstream broke the stream after ${bytes} bytes: ${firstSentence((e as Error)?.message)}`);
          ctrl.close();
        }
      },
      cancel(reason) {
        finish("agent closed the stream");
        void reader.cancel(reason).catch(() => {});
      },
    },
    { highWaterMark: 0 },
  );
}
