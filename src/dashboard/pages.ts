/**
 * The dashboard's pages as HTML shells: navigation, headings, forms and empty regions, the same
 * for every project and visitor. They carry no data (the client script asks the API with the
 * session cookie) and no inline script or style, so the Content-Security-Policy allows nothing
 * but this origin's own files.
 */
import { STATUSES } from "../store";
import { ICON, SCRIPT, STYLE } from "./assets";
import { GROUP_BODY } from "./compare-page";

export type PageName = "home" | "tasks" | "task" | "watch" | "usage" | "group";

/** Only this origin; no inline script or style; not framed; forms post only here. */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const TITLES: Record<PageName, string> = { home: "Home", tasks: "Tasks", task: "Task", watch: "Watch", usage: "Usage", group: "Compare" };

const nav = (page: PageName) =>
  `<nav aria-label="Sections"><a class="brand" href="/">lazy</a>${(["home", "tasks", "watch", "usage"] as const)
    .map(
      (p) =>
        `<a href="${p === "home" ? "/" : `/${p}`}"${p === page || ((page === "task" || page === "group") && p === "tasks") ? ' aria-current="page"' : ""}>${TITLES[p]}</a>`,
    )
    .join("")}</nav>`;

const statusOptions = STATUSES.map((s) => `<option value="${s}">${s}</option>`).join("");

const BODIES: Record<PageName, string> = {
  group: GROUP_BODY,
  home: `<h1>Home</h1>
<p id="error" class="error" role="alert" hidden></p>
<section aria-labelledby="h-inbox"><h2 id="h-inbox">Waiting for you</h2><div id="inbox" class="muted">Loading…</div></section>
<div id="expiry" class="expiry" role="status" hidden></div>
<section aria-labelledby="h-counts"><h2 id="h-counts">Tasks by status</h2>
<ul id="counts" class="counts">
${STATUSES.map((s) => `<li data-status="${s}"><a href="/tasks?status=${s}"><span class="n" data-count="${s}">–</span><span class="s">${s}</span></a></li>`).join("\n")}
</ul></section>
<section aria-labelledby="h-active"><h2 id="h-active">Running and waiting</h2><ul id="active" class="rows"><li class="muted">Loading…</li></ul></section>
<section aria-labelledby="h-budget"><h2 id="h-budget">Token budget today</h2><div id="budget" class="muted">Loading…</div></section>
<section aria-labelledby="h-health"><h2 id="h-health">Provider health (last hour)</h2><ul id="health" class="rows"><li class="muted">Loading…</li></ul></section>`,
  tasks: `<h1>Tasks</h1>
<p id="error" class="error" role="alert" hidden></p>
<details id="add-box"><summary>Add a task</summary>
<form id="add" class="stack">
<label for="add-prompt">Prompt</label><textarea id="add-prompt" name="prompt" rows="4" required></textarea>
<div class="pair"><div><label for="add-code">Code (optional)</label><input id="add-code" name="code" autocomplete="off" placeholder="fix-login"></div>
<div><label for="add-profile">Profile</label><select id="add-profile" name="profile"><option value="">default</option></select></div></div>
<div><button type="submit">Add task</button> <span id="add-result" role="status"></span></div>
</form></details>
<form id="filter" class="filter" role="search">
<div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">all</option>${statusOptions}</select></div>
<div class="grow"><label for="f-q">Search</label><input id="f-q" name="q" type="search" autocomplete="off" placeholder="words in title, prompt, code or id"></div>
</form>
<p id="total" class="muted" role="status"></p>
<ul id="tasks" class="rows"></ul>
<div class="pager"><button type="button" id="newer" disabled>Newer</button><button type="button" id="older" disabled>Older</button></div>`,
  task: `<p id="error" class="error" role="alert" hidden></p>
<header class="task-head"><h1 id="title">Task</h1><p><span id="status" class="badge">…</span> <span id="ref" class="muted"></span></p><p id="why" class="why"></p>
<section id="asked" class="asked" aria-labelledby="h-asked" hidden><h2 id="h-asked">The agent asks you <span id="asked-when" class="muted"></span></h2><blockquote id="question"></blockquote>
<form id="answer" class="stack"><label for="answer-text" class="sr">Your answer</label><textarea id="answer-text" rows="2" required placeholder="Your answer: the agent's next turn has it"></textarea><div><button type="submit">Answer</button></div></form></section>
<dl class="facts"><div><dt>Profile</dt><dd id="profile">–</dd></div><div><dt>Tokens</dt><dd id="tokens">–</dd></div><div><dt>Cost</dt><dd id="cost">–</dd></div><div><dt>Budget</dt><dd id="limit">–</dd></div></dl></header>
<section aria-labelledby="h-actions"><h2 id="h-actions">Actions</h2>
<div class="actions"><button type="button" data-verb="start">Start</button><button type="button" data-verb="stop">Stop</button><button type="button" data-verb="accept">Accept</button><button type="button" data-verb="reject">Reject</button><button type="button" data-verb="close">Close</button></div>
<form id="send" class="stack"><label for="send-text">Send a message</label><textarea id="send-text" rows="2" required></textarea><div><button type="submit">Send</button></div></form>
<form id="budget" class="inline"><label for="budget-n">Raise its budget by</label><input id="budget-n" type="number" min="0" step="any" required><label for="budget-unit" class="sr">Unit</label><select id="budget-unit"><option value="tokens">tokens</option><option value="usd">USD</option></select><button type="submit">Raise</button></form>
<p id="notice" role="status" class="muted"></p></section>
<section aria-labelledby="h-prompt"><h2 id="h-prompt">Prompt</h2><pre id="prompt" class="wrap"></pre></section>
<section aria-labelledby="h-events"><h2 id="h-events">Events</h2><ol id="events" class="lines"></ol></section>
<section aria-labelledby="h-diff"><h2 id="h-diff">Diff</h2><div id="diff" class="muted">Loading…</div></section>
<section aria-labelledby="h-audit"><h2 id="h-audit">Audit</h2><div id="audit" class="muted">Loading…</div></section>`,
  watch: `<h1>Watch</h1>
<p id="error" class="error" role="alert" hidden></p>
<form id="wfilter" class="filter"><div class="grow"><label for="w-task">Tasks (codes or id prefixes, comma-separated; empty: every task)</label><input id="w-task" autocomplete="off"></div><div><button type="submit">Follow</button></div></form>
<ol id="watch" class="lines"></ol>`,
  usage: `<h1>Usage</h1>
<p id="error" class="error" role="alert" hidden></p>
<section aria-labelledby="h-limits"><h2 id="h-limits">Credentials</h2><div id="limits" class="muted">Loading…</div></section>
<section aria-labelledby="h-ubudget"><h2 id="h-ubudget">Budgets</h2><div id="ubudget" class="muted">Loading…</div></section>
<section aria-labelledby="h-days"><h2 id="h-days">Day by day</h2><div id="days" class="muted">Loading…</div></section>`,
};

export function page(name: PageName): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>lazy · ${TITLES[name]}</title>
<link rel="icon" href="${ICON.path}" type="image/svg+xml">
<link rel="stylesheet" href="${STYLE.path}">
<script type="module" src="${SCRIPT.path}"></script>
</head>
<body data-page="${name}">
<header class="top">${nav(name)}<span id="state" role="status">connecting…</span></header>
<main>
${BODIES[name]}
</main>
</body>
</html>`;
}

/** The page a path shows, or null (a 404). */
export function pageFor(path: string): PageName | null {
  if (path === "/") return "home";
  if (path === "/tasks") return "tasks";
  if (path === "/watch") return "watch";
  if (path === "/usage") return "usage";
  if (/^\/tasks\/[^/]+$/.test(path)) return "task";
  if (/^\/groups\/[^/]+$/.test(path)) return "group";
  return null;
}
