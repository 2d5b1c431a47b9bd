/** Usage: each credential's windows as used-percent bars with a countdown to each reset, PAUSED marks, budgets, and the days. */
import { costText } from "../../lines";
import type * as Answers from "../answers";
import { $, api, countdown, debounce, exact, fill, h, num, showError, table, usd, when } from "./dom";
import { healthList } from "./home";
import { live } from "./live";

type Limits = Answers.Limits;
type Limit = Limits["limits"][number];
type Pause = Limits["paused"][number];
type Budget = Answers.Budget;

const clock = (iso: string) => h("span", { "data-resets": iso }, countdown(iso));

function limitsView(limits: Limit[], paused: Pause[]): Node[] {
  if (!limits.length) return [h("p", { class: "muted" }, "No usage-limit readings yet: they come with the first answer from a provider.")];
  return limits.map((l) => {
    const p = paused.find((x) => x.credential === l.credential);
    const ws = l.windows.filter((w) => w.usedPercent !== null || w.status);
    return h(
      "article",
      { class: "rows" },
      h(
        "div",
        {},
        h(
          "div",
          { class: "row-head" },
          h("strong", {}, l.credential ?? l.owner),
          h("span", { class: "muted" }, `${l.owner} · ${l.upstream} · `, when(l.at, "read ")),
        ),
        p &&
          h(
            "p",
            { class: "paused" },
            "PAUSED ",
            h(
              "span",
              { class: "muted" },
              "until ",
              h("time", { datetime: p.resetsAt, title: exact(p.resetsAt) }, exact(p.resetsAt).slice(11, 16)),
              " (in ",
              clock(p.resetsAt),
              `): ${p.detail} — new turns on ${p.credential} wait for the reset ([usage_pause])`,
            ),
          ),
        l.quota && !p && h("p", { class: "error" }, "quota refused ", when(l.quota.at), `: ${l.quota.detail}`),
        !ws.length && h("p", { class: "muted" }, "no reading"),
        ...ws.map((w) => {
          const pct = w.usedPercent === null ? null : Math.round(w.usedPercent);
          const bar =
            pct === null
              ? h("span", { class: "muted" }, "no fill level")
              : h("progress", { max: "100", value: String(Math.min(100, pct)), "aria-label": `${w.name} used` });
          return h(
            "div",
            { class: "window" },
            h("span", {}, w.name),
            bar,
            h("strong", {}, pct === null ? "–" : `${pct} %`),
            h(
              "span",
              { class: "when" },
              w.status ?? "",
              w.resetsAt ? h("span", { title: exact(w.resetsAt) }, `${w.status ? " · " : ""}resets in `, clock(w.resetsAt)) : "",
            ),
          );
        }),
      ),
    );
  });
}

function budgetView(b: Budget): Node[] {
  const entries = Object.entries(b.budget).filter(([, v]) => v !== undefined);
  return [
    h(
      "p",
      {},
      entries.length
        ? `[budget] ${entries.map(([k, v]) => `${k} = ${v}`).join(", ")}`
        : "No [budget] in lazy.toml: nothing stops a task for what it spends.",
    ),
    h(
      "p",
      {},
      `Today (${b.today.day}, UTC): ${num(b.today.tokens)} tokens · ${costText(b.today, true)} · ${num(b.today.requests)} request(s)`,
    ),
    b.tasks.length
      ? table(
          [
            h("th", {}, "task"),
            h("th", { class: "num" }, "tokens"),
            h("th", { class: "num" }, "cost"),
            h("th", { class: "num" }, "budget"),
          ],
          b.tasks
            .slice(0, 20)
            .map((t) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: `/tasks/${encodeURIComponent(t.code ?? t.taskId)}` }, t.code ?? t.taskId.slice(0, 8))),
                h("td", { class: "num" }, num(t.tokens)),
                h("td", { class: "num" }, costText(t, true)),
                h("td", { class: "num" }, t.limit.tokens !== null ? num(t.limit.tokens) : t.limit.usd !== null ? usd(t.limit.usd) : "–"),
              ),
            ),
        )
      : h("p", { class: "muted" }, "No task has spent anything yet."),
  ];
}

function daysView(b: Budget): Node {
  if (!b.days.length) return h("p", { class: "muted" }, "Nothing spent in the last 30 days.");
  return table(
    [
      h("th", {}, "day (UTC)"),
      h("th", { class: "num" }, "requests"),
      h("th", { class: "num" }, "tokens"),
      h("th", { class: "num" }, "cost"),
    ],
    b.days.map((d) =>
      h(
        "tr",
        {},
        h("td", {}, d.day),
        h("td", { class: "num" }, num(d.requests)),
        h("td", { class: "num" }, num(d.tokens)),
        h("td", { class: "num" }, costText(d, true)),
      ),
    ),
  );
}

export async function usage(): Promise<void> {
  const load = async () => {
    try {
      const [limits, budget] = await Promise.all([api<Limits>("GET", "/api/stats/limits"), api<Budget>("GET", "/api/stats/budget")]);
      fill(
        $("limits"),
        ...limitsView(limits.limits, limits.paused),
        h("h3", {}, "Provider health (last hour)"),
        h("ul", { class: "rows" }, ...healthList(limits.health)),
      );
      fill($("ubudget"), ...budgetView(budget));
      fill($("days"), daysView(budget));
      showError(null);
    } catch (e) {
      showError(e);
    }
  };
  // Countdowns tick here; the figures change when traffic passes (the live stream's net> items).
  setInterval(() => {
    for (const el of document.querySelectorAll<HTMLElement>("[data-resets]")) el.textContent = countdown(el.dataset.resets!);
  }, 1000);
  const later = debounce(() => void load(), 1000);
  live("?watch=1", { hello: () => void load(), item: (i: { type: string }) => i.type === "net" && later() });
}
