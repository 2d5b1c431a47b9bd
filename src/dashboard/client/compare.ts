/**
 * A best-of-N group's page: its candidates side by side (the same comparison lazy compare
 * prints: status, diffstat, the [review] check's verdict, tokens and cost from lazy's audit,
 * wall time), a button that runs the check, and per candidate Accept (which closes the others)
 * and Reject (asked first: it deletes the branch). Everything shown may come from an agent:
 * text only, never HTML.
 */
import { costText } from "../../lines";
import type * as Answers from "../answers";
import { $, api, debounce, fill, h, num, showError, table } from "./dom";
import { live } from "./live";

type Comparison = Answers.Comparison;
type Candidate = Comparison["candidates"][number];

const wall = (ms: number) =>
  ms < 60_000 ? `${Math.round(ms / 1000)}s` : `${Math.floor(ms / 60_000)}m ${Math.round((ms % 60_000) / 1000)}s`;

export async function group(): Promise<void> {
  const code = decodeURIComponent(location.pathname.split("/")[2] ?? "");
  const path = `/api/groups/${encodeURIComponent(code)}`;
  const notice = $("notice");
  let shown: Comparison | null = null;

  const say = (text: string, error = false) => {
    notice.className = error ? "error" : "";
    notice.textContent = text;
  };

  const act = async (label: string, run: () => Promise<unknown>) => {
    for (const b of document.querySelectorAll<HTMLButtonElement>("main button")) b.disabled = true;
    say(`${label}…`);
    try {
      await run();
      say(`${label}: done.`);
    } catch (e) {
      say((e as Error).message, true);
    } finally {
      await load();
    }
  };

  const acceptAsked = (c: Candidate) => {
    const ref = c.code ?? c.id;
    const others = (shown?.candidates ?? []).filter((o) => o.id !== c.id && !["accepted", "rejected", "closed"].includes(o.status));
    const text = `Accept ${ref}: merge ${c.branch}${others.length ? ` and close ${others.map((o) => o.code ?? o.id).join(", ")} (their branches stay)` : ""}?`;
    if (confirm(text))
      void act(`Accept ${ref}`, () => api("POST", `/api/tasks/${encodeURIComponent(c.id)}/accept`, c.tip ? { tip: c.tip } : {}));
  };

  const row = (c: Candidate) => {
    const baseOk = shown?.base?.ok === true;
    const ref = c.code ?? c.id;
    const open = c.status === "done" || c.status === "waiting";
    const accept = h("button", { type: "button", "data-verb": "accept", disabled: !open }, "Accept");
    const reject = h("button", { type: "button", "data-verb": "reject", disabled: !open && c.status !== "failed" }, "Reject");
    accept.addEventListener("click", () => acceptAsked(c));
    reject.addEventListener("click", () => {
      if (confirm(`Reject ${ref} and delete its branch ${c.branch}? This cannot be undone.`))
        void act(`Reject ${ref}`, () => api("POST", `/api/tasks/${encodeURIComponent(c.id)}/reject`, {}));
    });
    const best = shown?.keep === ref;
    return h(
      "tr",
      { "data-task": c.id, class: best ? "best" : undefined },
      h(
        "td",
        { "data-label": "candidate", class: "name", title: best ? "Ranked first: Keep one points here" : undefined },
        h("a", { href: `/tasks/${encodeURIComponent(ref)}` }, ref),
      ),
      h("td", { "data-label": "profile" }, c.profile),
      h("td", { "data-label": "status" }, h("span", { class: `badge s-${c.status}` }, c.status)),
      h(
        "td",
        { class: "num", "data-label": "changes" },
        h(
          "span",
          {},
          `${c.diffstat.files} file(s) `,
          h("span", { class: "plus" }, `+${c.diffstat.added}`),
          " ",
          h("span", { class: "minus" }, `−${c.diffstat.removed}`),
        ),
      ),
      h(
        "td",
        {
          "data-label": "check",
          class: c.check ? (c.check.ok && !baseOk ? "pass" : c.check.ok ? "muted" : "failed") : "muted",
          title: c.check ? (c.check.error ?? c.check.output.slice(-600)) : (c.checkNote ?? ""),
        },
        c.check ? (c.check.ok ? (baseOk ? "pass on base too" : "pass") : `fail (exit ${c.check.code})`) : "–",
      ),
      h("td", { class: "num", "data-label": "tokens" }, num(c.tokens)),
      h("td", { class: "num", "data-label": "cost" }, costText(c, true)),
      h("td", { class: "num", "data-label": "wall" }, wall(c.wallMs)),
      h("td", { class: "summary", "data-label": "summary" }, c.summary ?? ""),
      h("td", { class: "verbs" }, h("span", { class: "actions" }, accept, reject)),
    );
  };

  const render = (c: Comparison) => {
    shown = c;
    $("title").textContent = `Compare: ${c.title}`;
    $("group").textContent = `group ${c.group}`;
    $("check").textContent = c.check ?? "none ([review] check in lazy.toml names one)";
    const base = $("base");
    base.textContent = c.base
      ? `${c.base.ok ? "pass" : `fail (exit ${c.base.code})`}${c.baseNote ? `: ${c.baseNote}` : ""}`
      : (c.baseNote ?? "–");
    base.className = c.base?.ok ? "failed" : "";
    $("prompt").textContent = c.prompt;
    $<HTMLButtonElement>("run-check").disabled = !c.check;
    fill(
      $("candidates"),
      table(
        ["candidate", "profile", "status", "changes", "check", "tokens", "cost", "wall", "summary", ""].map((t) =>
          h("th", { class: ["changes", "tokens", "cost", "wall"].includes(t) ? "num" : undefined }, t),
        ),
        c.candidates.map(row),
        { id: "compare" },
      ),
    );
    keep(c);
    pairChoices(c);
  };

  /** Keep one: the ranked-first candidate that changed something, or why there is none. */
  const keep = (c: Comparison) => {
    const best = c.candidates.find((x) => (x.code ?? x.id) === c.keep);
    const button = h("button", { type: "button", id: "keep-one", disabled: !best }, best ? `Keep ${c.keep}` : "Keep one");
    if (best) button.addEventListener("click", () => acceptAsked(best));
    fill(
      $("keep"),
      button,
      h(
        "span",
        { class: "muted", id: "keep-why" },
        best ? "ranked first: it changed files, and its check (if any) did best" : (c.keepNote ?? ""),
      ),
    );
  };

  /** The two candidates the diff compares: kept across reloads while they are still in the group. */
  const pairChoices = (c: Comparison) => {
    const refs = c.candidates.map((x) => x.code ?? x.id);
    for (const [id, fallback] of [
      ["pair-from", refs[0]],
      ["pair-to", refs[1] ?? refs[0]],
    ] as const) {
      const sel = $<HTMLSelectElement>(id);
      const was = sel.value;
      sel.replaceChildren(...refs.map((r) => h("option", { value: r }, r)));
      sel.value = refs.includes(was) ? was : (fallback ?? "");
    }
  };

  const showPair = async () => {
    const from = $<HTMLSelectElement>("pair-from").value;
    const to = $<HTMLSelectElement>("pair-to").value;
    const out = $("pair-diff");
    try {
      const d = await api<Answers.GroupDiff>("GET", `${path}/diff?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
      fill(
        out,
        h(
          "p",
          { class: "muted" },
          `${d.from} → ${d.to}: ${d.total.files} file(s) `,
          h("span", { class: "plus" }, `+${d.total.added}`),
          " ",
          h("span", { class: "minus" }, `−${d.total.removed}`),
        ),
        d.note && h("p", { class: "muted" }, d.note),
        ...d.files.map((f) =>
          h(
            "details",
            { class: "file", open: true },
            h(
              "summary",
              {},
              `${f.path} `,
              f.binary
                ? "(binary)"
                : h("span", {}, h("span", { class: "plus" }, `+${f.added}`), " ", h("span", { class: "minus" }, `−${f.removed}`)),
            ),
            ...f.hunks.map((hk) =>
              h(
                "div",
                { class: "hunk" },
                h("span", { class: "h" }, hk.header),
                ...hk.lines.map((l) => h("span", { class: l[0] === "+" ? "a" : l[0] === "-" ? "d" : undefined }, l)),
              ),
            ),
          ),
        ),
        d.cut && h("p", { class: "muted" }, "Cut: the diff passed lazy's limit; later files show their counts only."),
      );
    } catch (e) {
      out.className = "error";
      out.textContent = (e as Error).message;
    }
  };
  $("pair").addEventListener("submit", (e) => {
    e.preventDefault();
    void showPair();
  });

  const load = async () => {
    try {
      render(await api<Comparison>("GET", path));
      showError(null);
    } catch (e) {
      showError(e);
    }
  };

  $<HTMLButtonElement>("run-check").addEventListener(
    "click",
    () =>
      void act("Run check", async () => {
        const r = await api<Answers.Check>("POST", `${path}/check`, {});
        render(r.comparison);
      }),
  );

  await load();
  const reload = debounce(() => void load(), 500);
  live("", {
    hello: reload,
    task: (t: { id: string }) => {
      if (shown?.candidates.some((c) => c.id === t.id)) reload();
    },
  });
}
