/**
 * The dashboard's one live stream (server-sent events). Every connection gets `hello`, the task
 * counts (again whenever a task changes) and each changed task's row (`task`: its status, why,
 * tokens, last message). With `?watch=1` it also carries every `lazy watch` item, and with
 * `?task=REF` (the task filter's rules, store resolveFilter) that task's items only: its
 * events as `lazy logs` prints them and its net> lines. A page reloads what it shows on each
 * `hello`, so a reconnect (EventSource does it by itself, e.g. after a daemon restart) misses
 * nothing. A reader that falls behind loses items and is told how many, as lazy watch is.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Bus } from "../../bus";
import type { Config } from "../../config";
import { rows } from "../../dashboard";
import { Tasks } from "../../store";
import { follow, sourceOf, type WatchItem } from "../../watch";
import type { WatchDeps } from "./watch";

export interface EventDeps {
  db: Database;
  bus: Pick<Bus, "subscribe">;
  config: () => Config;
  proxy: WatchDeps["proxy"];
}

/** Bytes a reader may fall behind before items are dropped (and counted). */
const MAX_BEHIND = 4_000_000;

export function eventRoutes(d: EventDeps) {
  return new Elysia().get("/api/events", async ({ request }) => {
    const q = new URL(request.url).searchParams;
    const tasks = q.has("task") ? Tasks.resolveFilter(d.db, q.getAll("task")) : null;
    const watching = tasks !== null || q.get("watch") === "1";
    const enc = new TextEncoder();
    let unsubscribe = () => {};
    let stopWatch = () => {};
    let beat: Timer | undefined;
    let closed = false;
    const end = () => {
      closed = true;
      unsubscribe();
      stopWatch();
      clearInterval(beat);
    };
    const stream = new ReadableStream<Uint8Array>(
      {
        async start(ctrl) {
          let dropped = 0;
          const send = (event: string, data: unknown) => {
            if (closed) return;
            if ((ctrl.desiredSize ?? 0) < -MAX_BEHIND) return void dropped++;
            if (dropped) {
              ctrl.enqueue(
                enc.encode(`event: item\ndata: ${JSON.stringify({ type: "dropped", at: new Date().toISOString(), count: dropped })}\n\n`),
              );
              dropped = 0;
            }
            ctrl.enqueue(enc.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
          };
          send("hello", { at: new Date().toISOString(), watching, tasks: tasks?.map((t) => ({ id: t.id, code: t.code })) ?? null });
          send("counts", Tasks.counts(d.db));
          // Changes come in bursts (a turn's events): one counts and one row per task per turn of the loop.
          const changed = new Set<string>();
          let scheduled = false;
          const flush = () => {
            scheduled = false;
            if (closed) return;
            const ids = [...changed];
            changed.clear();
            send("counts", Tasks.counts(d.db));
            const found = ids.flatMap((id) => {
              try {
                return [Tasks.resolve(d.db, id)];
              } catch {
                return [];
              }
            });
            for (const row of rows(d.db, d.config(), found)) send("task", row);
          };
          unsubscribe = d.bus.subscribe((c) => {
            if (c.kind !== "task") return;
            changed.add(c.taskId);
            if (!scheduled) {
              scheduled = true;
              setTimeout(flush, 0);
            }
          });
          if (watching) {
            const source = sourceOf(d);
            const stop = await follow(
              source,
              { tasks: tasks?.map((t) => ({ id: t.id, code: t.code })) ?? null, since: null },
              (item: WatchItem) => send("item", item),
            );
            if (closed) stop();
            else stopWatch = stop;
          }
          beat = setInterval(() => {
            if (!closed) ctrl.enqueue(enc.encode(": keep-alive\n\n"));
          }, 15_000);
          request.signal.addEventListener("abort", () => {
            end();
            try {
              ctrl.close();
            } catch {}
          });
        },
        cancel: end,
      },
      { highWaterMark: 64 * 1024, size: (chunk) => chunk?.byteLength ?? 0 },
    );
    return new Response(stream, {
      headers: { "content-type": "text/event-stream", "cache-control": "no-store", connection: "keep-alive" },
    });
  });
}
