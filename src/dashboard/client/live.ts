/**
 * The page's one live stream: /api/events (server-sent events). EventSource reconnects by
 * itself after a dropped connection (a daemon restart); when the browser gives up (an error
 * answer), this opens it again, less and less often, unless the session is gone. Each `hello`
 * tells the page to reload what it shows, so nothing that happened while away is missed.
 */
import { $ } from "./dom";

export interface Handlers {
  hello?: () => void;
  counts?: (c: Record<string, number>) => void;
  task?: (row: any) => void;
  item?: (item: any) => void;
}

export function live(query: string, on: Handlers): { close(): void } {
  let es: EventSource | undefined;
  let wait = 500;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const state = $("state");
  const open = () => {
    es = new EventSource(`/api/events${query}`);
    es.addEventListener("hello", () => {
      wait = 500;
      state.textContent = "live";
      on.hello?.();
    });
    es.addEventListener("counts", (e) => {
      state.textContent = "live";
      on.counts?.(JSON.parse((e as MessageEvent).data));
    });
    if (on.task) es.addEventListener("task", (e) => on.task!(JSON.parse((e as MessageEvent).data)));
    if (on.item) es.addEventListener("item", (e) => on.item!(JSON.parse((e as MessageEvent).data)));
    es.onerror = () => {
      state.textContent = "reconnecting…";
      if (es?.readyState !== EventSource.CLOSED || stopped) return;
      timer = setTimeout(async () => {
        const r = await fetch("/api/health").catch(() => null);
        if (r?.status === 401) {
          state.textContent = "not signed in";
          return;
        }
        if (!stopped) open();
      }, wait);
      wait = Math.min(wait * 2, 10_000);
    };
  };
  open();
  return {
    close() {
      stopped = true;
      clearTimeout(timer);
      es?.close();
    },
  };
}
