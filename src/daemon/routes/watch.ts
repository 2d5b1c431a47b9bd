/**
 * `lazy watch`'s stream: every task's events and the proxy's traffic, one JSON object a line
 * (application/x-ndjson), backlog first (`since`), then live. The task filter follows the
 * docs' rules (store: resolveFilter). A reader that falls far behind loses lines, and is told
 * how many, rather than growing the daemon's memory without bound.
 */
import type { Database } from "bun:sqlite";
import { Elysia } from "elysia";
import type { Bus } from "../../bus";
import type { ModelProxy } from "../../proxy";
import { Tasks } from "../../store";
import { LazyError } from "../../util/errors";
import { follow, sourceOf, type WatchItem, type WatchSource } from "../../watch";

export interface WatchDeps {
  db: Database;
  bus: Pick<Bus, "subscribe">;
  proxy: Pick<ModelProxy, "state" | "error"> & { audit: WatchSource["audit"] & {} };
  expiry?: WatchSource["expiry"];
}

/** Lines a reader may fall behind before lines are dropped (and counted). */
const MAX_BEHIND = 20_000;

/** `10m`, `2h`, `90s`, `1d`, or an ISO time → epoch ms. */
export function parseSince(s: string, now = Date.now()): number {
  const m = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(s.trim());
  if (m) return now - Number(m[1]) * { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2] as "s" | "m" | "h" | "d"];
  const t = Date.parse(s);
  if (Number.isFinite(t) && /^\d{4}-\d\d-\d\d/.test(s)) return t;
  throw new LazyError("invalid_input", `--since "${s}" is neither a duration (30s, 10m, 2h, 1d) nor an ISO time.`);
}

export function watchRoutes(d: WatchDeps) {
  return new Elysia().get("/api/watch", async ({ request }) => {
    const q = new URL(request.url).searchParams;
    const tasks = q.has("task") ? Tasks.resolveFilter(d.db, q.getAll("task")) : null;
    const since = q.has("since") ? parseSince(q.get("since")!) : null;
    const source = sourceOf(d);
    const enc = new TextEncoder();
    let stop = () => {};
    let beat: Timer | undefined;
    let dropped = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        async start(ctrl) {
          const send = (item: WatchItem) => {
            if ((ctrl.desiredSize ?? 0) < -MAX_BEHIND) return void dropped++;
            if (dropped) {
              ctrl.enqueue(enc.encode(`${JSON.stringify({ type: "dropped", at: new Date().toISOString(), count: dropped })}\n`));
              dropped = 0;
            }
            ctrl.enqueue(enc.encode(`${JSON.stringify(item)}\n`));
          };
          const end = () => {
            stop();
            clearInterval(beat);
            try {
              ctrl.close();
            } catch {}
          };
          request.signal.addEventListener("abort", end);
          stop = await follow(source, { tasks: tasks?.map((t) => ({ id: t.id, code: t.code })) ?? null, since }, send);
          if (request.signal.aborted) end();
          // A blank line now and then: the reader learns the daemon is there, proxies keep it open.
          beat = setInterval(() => ctrl.enqueue(enc.encode("\n")), 15_000);
        },
        cancel() {
          stop();
          clearInterval(beat);
        },
      },
      { highWaterMark: 64 },
    );
    return new Response(stream, { headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" } });
  });
}
