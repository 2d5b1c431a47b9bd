/** Watch: the `lazy watch` stream, live, with its task filter (the same rules: codes or id prefixes, never empty). */

import { watchLine } from "../../lines";
import type { WatchItem as Item } from "../../watch";
import { $, api, h, showError } from "./dom";
import { live } from "./live";

const MAX_LINES = 2_000;

export async function watch(): Promise<void> {
  const list = $("watch");
  const input = $<HTMLInputElement>("w-task");
  const params = new URLSearchParams(location.search);
  input.value = params.getAll("task").join(", ");
  let stream: { close(): void } | undefined;

  const follow = async () => {
    const refs = input.value
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const query = new URLSearchParams();
    for (const r of refs) query.append("task", r);
    history.replaceState(null, "", `/watch${refs.length ? `?${query}` : ""}`);
    // The filter is checked by the daemon (store resolveFilter) before the stream opens: its refusal is shown as the CLI shows it.
    try {
      if (refs.length) await api("GET", `/api/stats/audit?${refs.map((r) => `task=${encodeURIComponent(r)}`).join("&")}&limit=1`);
      showError(null);
    } catch (e) {
      showError(e);
      return;
    }
    stream?.close();
    list.replaceChildren();
    query.set("watch", "1");
    stream = live(`?${query}`, {
      item: (item: Item) => {
        const text = watchLine(item);
        if (text === null) return;
        const atEnd =
          window.innerHeight + window.scrollY >= document.body.scrollHeight - 8 ||
          list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
        list.append(h("li", { class: item.type === "net" ? (item.refused ? "net refused" : "net") : item.type }, text));
        while (list.children.length > MAX_LINES) list.firstElementChild?.remove();
        if (atEnd) list.scrollTop = list.scrollHeight;
      },
    });
  };
  $("wfilter").addEventListener("submit", (e) => {
    e.preventDefault();
    void follow();
  });
  await follow();
}
