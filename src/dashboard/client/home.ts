/** Home: tasks by status, what runs or waits and why, today's tokens against [budget], provider health. */
import { costText } from "../../lines";
import type * as Answers from "../answers";
import { $, api, debounce, fill, h, num, showError, usd, when } from "./dom";
import { inbox } from "./inbox";
import { live } from "./live";
import { rowItem } from "./rows";

type Home = Answers.Home;
type Health = Home["health"][number];

const showCounts = (counts: Record<string, number>) => {
  for (const [s, n] of Object.entries(counts)) {
    const el = document.querySelector(`[data-count="${s}"]`);
    if (el) el.textContent = String(n);
  }
};

export function healthList(list: Health[]): HTMLElement[] {
  if (!list.length) return [h("li", { class: "muted" }, "No requests in the last hour.")];
  return list.map((p) => {
    const failed = Object.entries(p.failures).filter(([, n]) => n > 0);
    return h(
      "li",
      {},
      h(
        "div",
        { class: "row-head" },
        h("strong", {}, p.provider),
        h("span", {}, `${num(p.requests)} request(s)`),
        h(
          "span",
          { class: failed.length ? "error" : "muted" },
          failed.length ? failed.map(([k, n]) => `${n} ${k}`).join(", ") : "no failures",
        ),
      ),
      p.latest && h("div", { class: "row-meta" }, "latest failure ", when(p.latest.at), `: ${p.latest.kind} — ${p.latest.detail}`),
    );
  });
}

export function budgetLine(today: Home["today"], b: Home["budget"], over: Home["over"]): HTMLElement {
  const tok = b.per_day_tokens !== undefined ? ` of ${num(b.per_day_tokens)}` : "";
  const cost = b.per_day_usd !== undefined ? ` of ${usd(b.per_day_usd)}` : "";
  return h(
    "div",
    {},
    h(
      "p",
      {},
      h("strong", {}, `${num(today.tokens)}${tok} tokens`),
      ` · ${costText(today, true)}${cost} · ${num(today.requests)} request(s)`,
    ),
    b.per_day_tokens === undefined &&
      b.per_day_usd === undefined &&
      h("p", { class: "muted" }, "No day budget: [budget] per_day_tokens or per_day_usd in lazy.toml sets one."),
    over && h("p", { class: "error" }, over.message),
  );
}

export async function home(): Promise<void> {
  const load = async () => {
    try {
      const d = await api<Home>("GET", "/api/board/home");
      showCounts(d.counts);
      fill($("active"), ...(d.active.length ? d.active.map(rowItem) : [h("li", { class: "muted" }, "Nothing is running or waiting.")]));
      fill($("budget"), budgetLine(d.today, d.budget, d.over));
      fill($("health"), ...healthList(d.health));
      await inbox($("inbox"), later);
      showError(null);
    } catch (e) {
      showError(e);
    }
  };
  const later = debounce(load, 300);
  live("", { hello: load, counts: showCounts, task: later });
}
