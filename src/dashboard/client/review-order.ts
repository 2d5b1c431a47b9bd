/**
 * Where the diff sits on the task page: once a turn has ended (the task waits for a person), the
 * diff comes first, right under the task's head, as in a code review; before the agent has left
 * a diff, its events do. A diff already shown stays first while a next turn runs (marked stale
 * by the review view), so it does not jump away under the reader.
 */
const ENDED = new Set(["done", "waiting", "failed"]);

export function diffFirst(status: string, shown: boolean): void {
  const diff = document.getElementById("diff")?.closest("section");
  const head = document.querySelector("main > header.task-head");
  const events = document.getElementById("events")?.closest("section");
  if (!diff || !head || !events) return;
  if (ENDED.has(status) || (status === "running" && shown)) {
    if (head.nextElementSibling !== diff) head.after(diff);
  } else if (events.nextElementSibling !== diff) events.after(diff);
}
