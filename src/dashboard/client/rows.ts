/** A task as a row of a list (home, tasks): its status and why first, then profile, tokens, age, last message. */
import { costText } from "../../lines";
import type * as Answers from "../answers";
import { badge, h, num, when, withTimes } from "./dom";

/** A row as the API answers it (daemon/routes/board.ts). */
export type Row = Answers.Row;

export const refOf = (t: { id: string; code: string | null }) => t.code ?? t.id;

export function rowItem(t: Row): HTMLLIElement {
  return h(
    "li",
    { "data-task": t.id, "data-status": t.status },
    h(
      "div",
      { class: "row-head" },
      badge(t.status),
      h("a", { href: `/tasks/${encodeURIComponent(refOf(t))}` }, t.title),
      h("span", { class: "muted" }, refOf(t)),
    ),
    h("div", { class: "why" }, ...withTimes(t.why)),
    h(
      "div",
      { class: "row-meta" },
      h("span", {}, `profile ${t.profile}`),
      h("span", {}, `${num(t.tokens)} tokens`),
      t.tokens > 0 && h("span", {}, costText(t, true)),
      h("span", {}, when(t.createdAt, "added ")),
    ),
    t.lastMessage && h("p", { class: "last" }, t.lastMessage),
  );
}
