/**
 * One task: its state and why first, the actions the CLI has (same routes, same rules, same
 * error texts), the prompt, the live event stream as `lazy logs` prints it, the diff of its
 * branch, and its audit rows.
 */

import { costText, line, mcpBookkeeping } from "../../lines";
import type { TaskEvent } from "../../store";
import type * as Answers from "../answers";
import { $, ApiError, api, debounce, fill, h, num, showError, table, usd, when, withTimes } from "./dom";
import { live } from "./live";

type EventLike = Pick<TaskEvent, "at" | "kind" | "data">;

import { type Diff, ReviewView } from "./review";
import { diffFirst } from "./review-order";
import { type Row, refOf } from "./rows";

interface Ev extends EventLike {
  id: number;
}
type AuditRow = Answers.Audit["rows"][number];

const MAX_EVENTS = 5_000;

function eventItem(e: Ev): HTMLLIElement {
  const cls = e.kind === "status" ? "status" : e.kind === "result" && !e.data.ok ? "failed" : e.kind === "refused" ? "refused" : e.kind;
  return h("li", { "data-id": String(e.id), "data-kind": e.kind, class: cls }, line(e));
}

function auditView(rows: AuditRow[]): Node {
  if (!rows.length) return h("p", { class: "muted" }, "No requests recorded for this task.");
  return table(
    [
      h("th", {}, "time"),
      h("th", {}, "request"),
      h("th", { class: "num" }, "status"),
      h("th", { class: "num" }, "ms"),
      h(
        "th",
        { class: "num", title: "lazy's own added time: arrival → departure upstream / answer back → on to the agent" },
        "lazy ms in/out",
      ),
      h("th", { class: "num" }, "tokens in/out"),
    ],
    rows.map((r) => {
      const kept = mcpBookkeeping(r);
      return h(
        "tr",
        kept
          ? {
              class: "bookkeeping",
              title:
                "The MCP client's own session probe: lazy's MCP server is stateless and says so; the client goes on with plain POSTs. Not an error.",
            }
          : {},
        h("td", {}, when(new Date(r.at).toISOString())),
        h("td", {}, `${r.method} ${r.path}${r.note ? ` (${r.note})` : ""}`, kept && h("span", { class: "tag" }, "MCP bookkeeping")),
        h("td", { class: `num${!kept && r.status >= 400 ? " error" : ""}` }, String(r.status)),
        h("td", { class: "num" }, String(Math.round(r.durationMs))),
        h(
          "td",
          { class: "num" },
          r.lazyInMs === null && r.lazyOutMs === null ? "–" : `${(r.lazyInMs ?? 0).toFixed(2)}/${(r.lazyOutMs ?? 0).toFixed(2)}`,
        ),
        h("td", { class: "num" }, r.usage ? `${num(r.usage.input + r.usage.cacheRead + r.usage.cacheWrite)}/${num(r.usage.output)}` : "–"),
      );
    }),
  );
}

export async function task(): Promise<void> {
  const ref = decodeURIComponent(location.pathname.slice("/tasks/".length));
  const path = `/api/tasks/${encodeURIComponent(ref)}`;
  const list = $("events");
  const seen = new Map<number, Ev>();
  let id: string | null = null;
  let status: string | null = null;
  const notice = $("notice");
  /** The status the last action's answer reported: its notice stays while the task is there. */
  let noticeFor: string | null = null;

  // The bar under the diff carries Accept and Reject too: a long diff never hides them.
  const decide = h(
    "span",
    { class: "bar-actions" },
    h("button", { type: "button", "data-verb": "accept" }, "Accept"),
    h("button", { type: "button", "data-verb": "reject" }, "Reject"),
  );
  const verbButtons = () => [...document.querySelectorAll<HTMLButtonElement>(".actions button"), ...decide.querySelectorAll("button")];
  const asked = (q: Answers.BoardTask["question"]) => {
    $("asked").hidden = !q;
    $("question").textContent = q?.text ?? "";
    $("asked-when").replaceChildren(q ? when(q.at, "asked ") : "");
  };
  const review = new ReviewView($("diff"), path, decide, (r) => {
    const t = (r as { task?: { status?: string } }).task;
    notice.className = "";
    noticeFor = t?.status ?? null;
    notice.textContent = `Review sent${t?.status ? ` — the task is ${t.status}` : ""}.`;
    refreshRow();
  });
  /** The task's head; `question` as the board answered it (undefined: a live row, which carries none). */
  const head = (t: Row, limit?: { tokens: number | null; usd: number | null }, question?: Answers.BoardTask["question"]) => {
    document.title = `lazy · ${refOf(t)}`;
    $("title").textContent = t.title;
    fill($("status"), t.status);
    $("status").className = `badge s-${t.status}`;
    $("ref").textContent = `${refOf(t)} · ${t.id}`;
    $("why").replaceChildren(...withTimes(t.why));
    $("profile").textContent = t.profile;
    $("tokens").textContent = num(t.tokens);
    $("cost").textContent = costText(t, true);
    if (limit)
      $("limit").textContent =
        limit.tokens === null && limit.usd === null
          ? "none"
          : [limit.tokens !== null && `${num(limit.tokens)} tokens`, limit.usd !== null && usd(limit.usd)].filter(Boolean).join(", ");
    if (status !== null && status !== t.status) {
      void loadDiff();
      // What an action said is over once the task has moved past the status it reported (an
      // error stays until the next try).
      if (notice.className !== "error" && noticeFor !== null && t.status !== noticeFor) {
        notice.textContent = "";
        noticeFor = null;
      }
    }
    // The agent's question (ask_human) leads the page while it waits for an answer.
    if (question !== undefined) asked(question);
    else if (t.status !== "waiting") asked(null);
    else if (status !== "waiting") refreshRow();
    status = t.status;
    allowed = new Set(t.actions);
    review.setAllowed(allowed, t.status === "running");
    diffFirst(t.status, review.shown);
    if (!busy) enable();
  };
  // Only what the task's status allows is offered; the daemon still refuses the rest.
  let allowed = new Set<string>();
  let busy = false;
  const enable = () => {
    for (const b of verbButtons()) b.disabled = !allowed.has(b.dataset.verb!);
    for (const [form, verb] of [
      ["send", "send"],
      ["answer", "send"],
      ["budget", "budget"],
    ] as const)
      for (const el of $(form).querySelectorAll<HTMLButtonElement | HTMLTextAreaElement | HTMLInputElement | HTMLSelectElement>(
        "button, textarea, input, select",
      ))
        el.disabled = !allowed.has(verb);
  };
  const addEvents = (evs: Ev[]) => {
    const atEnd = list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
    for (const e of evs) {
      if (seen.has(e.id)) continue;
      seen.set(e.id, e);
      const li = eventItem(e);
      // In id order: almost always at the end.
      const after = [...list.children].reverse().find((c) => Number((c as HTMLElement).dataset.id) < e.id);
      if (after) after.after(li);
      else list.prepend(li);
    }
    while (list.children.length > MAX_EVENTS) list.firstElementChild?.remove();
    if (atEnd) list.scrollTop = list.scrollHeight;
  };
  const loadDiff = async () => {
    try {
      review.show(await api<Diff>("GET", `${path}/diff`));
      if (status) diffFirst(status, review.shown);
    } catch (e) {
      review.failed((e as Error).message);
    }
  };
  const loadAudit = async () => {
    try {
      fill($("audit"), auditView((await api<Answers.Audit>("GET", `/api/stats/audit?task=${encodeURIComponent(ref)}&limit=200`)).rows));
    } catch (e) {
      fill($("audit"), h("p", { class: "error" }, (e as Error).message));
    }
  };
  const load = async () => {
    // The diff is read alongside the task (a review starts there), not after it.
    const diff = loadDiff();
    try {
      const [shown, row] = await Promise.all([
        api<Answers.Task>("GET", path),
        api<Answers.BoardTask>("GET", `/api/board/tasks/${encodeURIComponent(ref)}`),
      ]);
      id = shown.task.id;
      $("prompt").textContent = shown.task.prompt ?? "";
      head(row.task, row.limit, row.question);
      addEvents(shown.events);
      showError(null);
    } catch (e) {
      showError(e);
      if (e instanceof ApiError && e.status === 404) return;
    }
    await diff;
    void loadAudit();
  };
  const audit = debounce(() => void loadAudit(), 500);
  const refreshRow = debounce(async () => {
    try {
      const row = await api<Answers.BoardTask>("GET", `/api/board/tasks/${encodeURIComponent(ref)}`);
      head(row.task, row.limit, row.question);
    } catch {}
  }, 300);

  // The actions: the CLI's routes; what they answer (or refuse) is shown as the CLI says it.
  const act = async (label: string, verb: string, body: unknown = {}) => {
    const buttons = [...verbButtons(), ...document.querySelectorAll<HTMLButtonElement>("#send button, #answer button, #budget button")];
    busy = true;
    for (const b of buttons) b.disabled = true;
    notice.className = "muted";
    notice.textContent =
      verb === "start" || verb === "send" ? `${label}… (a first turn may build the task's image: this can take minutes)` : `${label}…`;
    try {
      const r = await api<any>("POST", `${path}/${verb}`, body);
      const t = r?.task ?? r;
      notice.className = "";
      noticeFor = typeof t?.status === "string" ? t.status : null;
      notice.textContent = `${label}: done${t?.status ? ` — the task is ${t.status}` : ""}${r?.commits ? ` (${r.commits.length} commit(s) merged)` : ""}.`;
      refreshRow();
      return true;
    } catch (e) {
      notice.className = "error";
      notice.textContent = (e as Error).message;
      return false;
    } finally {
      busy = false;
      enable();
    }
  };
  for (const b of verbButtons())
    b.addEventListener("click", () => {
      // Reject deletes the branch: asked first, as lazy reject asks on a terminal.
      if (b.dataset.verb === "reject" && !confirm(`Reject task ${ref} and delete its branch lazy/${ref}? This cannot be undone.`)) return;
      // Accept names the tip of the diff on the page: a branch that moved since is refused, not merged unseen.
      const tip = b.dataset.verb === "accept" ? review.tip : null;
      void act(b.textContent ?? "", b.dataset.verb!, tip ? { tip } : {});
    });
  $<HTMLFormElement>("send").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $<HTMLTextAreaElement>("send-text");
    if (await act("Send", "send", { message: text.value })) text.value = "";
  });
  $<HTMLFormElement>("answer").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $<HTMLTextAreaElement>("answer-text");
    if (await act("Answer", "send", { message: text.value })) text.value = "";
  });
  $<HTMLFormElement>("budget").addEventListener("submit", async (e) => {
    e.preventDefault();
    const n = Number($<HTMLInputElement>("budget-n").value);
    const unit = $<HTMLSelectElement>("budget-unit").value;
    await act("Raise the budget", "budget", unit === "usd" ? { usd: n } : { tokens: Math.round(n) });
  });

  live(`?task=${encodeURIComponent(ref)}`, {
    hello: () => void load(),
    task: (row: Row) => {
      if (row.id === id) head(row);
    },
    item: (item: any) => {
      if (item.type === "event") addEvents([{ id: item.id, at: item.at, kind: item.kind, data: item.data }]);
      else if (item.type === "net") audit();
    },
  });
}
