/**
 * Home's "Waiting for you": done tasks to review (a link to each task's page, where the diff
 * comes first) and the agents' questions (MCP ask_human) in full, each with a reply box. A reply
 * is the task's next message (POST …/send), which is how an agent gets the human's answer.
 */
import type * as Answers from "../answers";
import { api, fill, h, when } from "./dom";
import { refOf, rowItem } from "./rows";

type Inbox = Answers.Inbox;

/** A reply box being written is kept across reloads (a live change would otherwise wipe it). */
const drafts = new Map<string, string>();

function question(q: Inbox["questions"][number], reload: () => void): HTMLElement {
  const text = h("textarea", { rows: "3", required: true, "aria-label": `Reply to ${refOf(q.task)}` });
  text.value = drafts.get(q.task.id) ?? "";
  text.addEventListener("input", () => drafts.set(q.task.id, text.value));
  const said = h("span", { role: "status" });
  const form = h("form", { class: "stack" }, text, h("div", {}, h("button", { type: "submit" }, "Reply"), " ", said));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const button = form.querySelector("button")!;
    button.disabled = true;
    said.className = "muted";
    said.textContent = "Sending…";
    try {
      await api("POST", `/api/tasks/${encodeURIComponent(q.task.id)}/send`, { message: text.value });
      drafts.delete(q.task.id);
      said.textContent = "Sent: the agent's next turn has it.";
      reload();
    } catch (err) {
      said.className = "error";
      said.textContent = (err as Error).message;
      button.disabled = false;
    }
  });
  return h(
    "li",
    { class: "inbox-question", "data-task": q.task.id },
    h(
      "div",
      { class: "row-head" },
      h("strong", {}, "Question"),
      h("a", { href: `/tasks/${encodeURIComponent(refOf(q.task))}` }, q.task.title),
      h("span", { class: "muted" }, `${refOf(q.task)} · `, when(q.at, "asked ")),
    ),
    h("blockquote", {}, q.question),
    form,
  );
}

export async function inbox(el: HTMLElement, reload: () => void): Promise<void> {
  const d = await api<Inbox>("GET", "/api/board/inbox");
  if (!d.review.length && !d.questions.length) return fill(el, h("p", { class: "muted" }, "Nothing waits for you."));
  // A reply being typed survives: only rebuild what is not focused.
  const typing = el.contains(document.activeElement) && document.activeElement?.tagName === "TEXTAREA";
  if (typing) return;
  fill(
    el,
    d.questions.length ? h("h3", {}, `Questions (${d.questions.length})`) : "",
    d.questions.length ? h("ul", { class: "rows", id: "inbox-questions" }, ...d.questions.map((q) => question(q, reload))) : "",
    d.review.length ? h("h3", {}, `To review (${d.review.length})`) : "",
    d.review.length ? h("ul", { class: "rows", id: "inbox-review" }, ...d.review.map(rowItem)) : "",
  );
}
