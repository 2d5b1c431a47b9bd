/** Tasks: every task a page at a time (newest first), by status and by text; add one. */
import type * as Answers from "../answers";
import { $, api, debounce, fill, h, num, showError } from "./dom";
import { live } from "./live";
import { type Row, rowItem } from "./rows";

type Page = Answers.TaskPage;

export async function tasks(): Promise<void> {
  const status = $<HTMLSelectElement>("f-status");
  const q = $<HTMLInputElement>("f-q");
  const list = $("tasks");
  const older = $<HTMLButtonElement>("older");
  const newer = $<HTMLButtonElement>("newer");
  const params = new URLSearchParams(location.search);
  status.value = params.get("status") ?? "";
  q.value = params.get("q") ?? "";
  // The cursors of the pages before this one (the first page has none).
  const trail: (string | null)[] = [];
  let cursor: string | null = null;
  let next: string | null = null;

  const load = async () => {
    const query = new URLSearchParams();
    if (status.value) query.set("status", status.value);
    if (q.value.trim()) query.set("q", q.value.trim());
    history.replaceState(null, "", `/tasks${query.size ? `?${query}` : ""}`);
    if (cursor) query.set("before", cursor);
    try {
      const p = await api<Page>("GET", `/api/board/tasks?${query}`);
      next = p.next;
      fill(list, ...(p.tasks.length ? p.tasks.map(rowItem) : [h("li", { class: "muted" }, "No task matches.")]));
      $("total").textContent =
        `${num(p.total)} task(s)${status.value ? ` ${status.value}` : ""}${q.value.trim() ? ` matching “${q.value.trim()}”` : ""}`;
      older.disabled = !next;
      newer.disabled = !trail.length;
      showError(null);
    } catch (e) {
      showError(e);
    }
  };
  const first = () => {
    trail.length = 0;
    cursor = null;
    void load();
  };
  status.addEventListener("change", first);
  q.addEventListener("input", debounce(first, 200));
  $("filter").addEventListener("submit", (e) => {
    e.preventDefault();
    first();
  });
  older.addEventListener("click", () => {
    if (!next) return;
    trail.push(cursor);
    cursor = next;
    void load();
  });
  newer.addEventListener("click", () => {
    cursor = trail.pop() ?? null;
    void load();
  });

  // Add a task: the profiles the config names, the default first.
  api<Answers.Profiles>("GET", "/api/board/profiles")
    .then((p) => {
      const sel = $<HTMLSelectElement>("add-profile");
      fill(
        sel,
        h("option", { value: "" }, `${p.default} (default)`),
        ...p.names.filter((n) => n !== p.default).map((n) => h("option", { value: n }, n)),
      );
    })
    .catch(showError);
  $<HTMLFormElement>("add").addEventListener("submit", async (e) => {
    e.preventDefault();
    const prompt = $<HTMLTextAreaElement>("add-prompt").value;
    const code = $<HTMLInputElement>("add-code").value.trim();
    const profile = $<HTMLSelectElement>("add-profile").value;
    const out = $("add-result");
    try {
      const t = await api<Answers.AddedTask>("POST", "/api/tasks", {
        prompt,
        ...(code ? { code } : {}),
        ...(profile ? { profile } : {}),
      });
      out.textContent = `Added ${t.code ?? t.id}.`;
      out.className = "";
      $<HTMLFormElement>("add").reset();
      first();
    } catch (err) {
      out.textContent = err instanceof Error ? err.message : String(err);
      out.className = "error";
    }
  });

  const reload = debounce(() => void load(), 150);
  live("", {
    hello: () => void load(),
    task: (row: Row) => {
      const li = list.querySelector(`[data-task="${row.id}"]`);
      if (li) li.replaceWith(rowItem(row));
      // A task this page does not show yet may belong on it (a new one, a changed status).
      if (!li || (status.value && row.status !== status.value)) if (!cursor) reload();
    },
  });
}
