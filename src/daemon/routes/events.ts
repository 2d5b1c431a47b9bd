/** The dashboard's live updates (server-sent events): the task counts now, then again whenever a task changes. */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import { Tasks } from "../../store";
import type { Bus } from "../../bus";

export interface EventDeps {
  db: Database;
  bus: Pick<Bus, "subscribe">;
}

export function eventRoutes(d: EventDeps) {
  return new Elysia().get("/api/events", ({ request }) => {
    let unsubscribe = () => {};
    let beat: Timer | undefined;
    const enc = new TextEncoder();
    const stream = new ReadableStream<Uint8Array>({
      start(ctrl) {
        const send = () => ctrl.enqueue(enc.encode(`event: counts\ndata: ${JSON.stringify(Tasks.counts(d.db))}\n\n`));
        send();
        unsubscribe = d.bus.subscribe((c) => {
          if (c.kind === "task") send();
        });
        beat = setInterval(() => ctrl.enqueue(enc.encode(": keep-alive\n\n")), 15_000);
        request.signal.addEventListener("abort", () => {
          unsubscribe();
          clearInterval(beat);
          try {
            ctrl.close();
          } catch {}
        });
      },
      cancel() {
        unsubscribe();
        clearInterval(beat);
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" } });
  });
}
