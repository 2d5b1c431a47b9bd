/**
 * A best-of-N group's page: its candidates side by side (the same comparison lazy compare
 * prints: status, diffstat, the [review] check's verdict, tokens and cost from lazy's audit,
 * wall time), a button that runs the check, and per candidate Accept (which closes the others)
 * and Reject (asked first: it deletes the branch). Everything shown may come from an agent:
 * text only, never HTML.
 */
import type { Answers } from "../../daemon";
import { costText } from "../../lines";
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

  const row = (c: Candidate) => {
    const ref = c.code ?? c.id;
    const open = c.status === "done" || c.status === "waiting";
    const accept = h("button", { type: "button", "data-verb": "accept", disabled: !open }, "Accept");
    const reject = h("button", { type: "button", "data-verb": "reject", disabled: !open && c.status !== "failed" }, "Reject");
    accept.addEventListener("click", () => {
      const others = (shown?.candidates ?? []).filter((o) => o.id !== c.id && !["accepted", "rejected", "closed"].includes(o.status));
      const text = `Accept ${ref}: merge ${c.branch}${others.length ? ` and close ${others.map((o) => o.code ?? o.id).join(", ")} (their branches stay)` : ""}?`;
      if (confirm(text)) void act(`Accept ${ref}`, () => api("POST", `/api/tasks/${encodeURIComponent(c.id)}/accept`, {}));
    });
    reject.addEventListener("click", () => {
      if (confirm(`Reject ${ref} and delete its branch ${c.branch}? This cannot be undone.`))
        void act(`Reject ${ref}`, () => api("POST", `/api/tasks/${encodeURIComponent(c.id)}/reject`, {}));
    });
    return h(
      "tr",
      { "data-task": c.id },
      h("td", {}, h("a", { href: `/tasks/${encodeURIComponent(ref)}` }, ref)),
      h("td", {}, c.profile),
      h("td", {}, h("span", { class: `badge s-${c.status}` }, c.status)),
      h(
        "td",
        { class: "num" },
        `${c.diffstat.files} file(s) `,
        h("span", { class: "plus" }, `+${c.diffstat.added}`),
        " ",
        h("span", { class: "minus" }, `−${c.diffstat.removed}`),
      ),
      h(
        "td",
        {
          class: c.check ? (c.check.ok ? "pass" : "failed") : "muted",
          title: c.check ? (c.check.error ?? c.check.output.slice(-600)) : (c.checkNote ?? ""),
        },
        c.check ? (c.check.ok ? "pass" : `fail (exit ${c.check.code})`) : "–",
      ),
      h("td", { class: "num" }, num(c.tokens)),
      h("td", { class: "num" }, costText(c, true)),
      h("td", { class: "num" }, wall(c.wallMs)),
      h("td", {}, c.summary ?? ""),
      h("td", {}, accept, " ", reject),
    );
  };

  const render = (c: Comparison) => {
    shown = c;
    $("title").textContent = `Compare: ${c.title}`;
    $("group").textContent = `group ${c.group}`;
    $("check").textContent = c.check ?? "none ([review] check in lazy.toml names one)";
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
  };

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
