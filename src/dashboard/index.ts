/**
 * The dashboard, served by the daemon itself. Its home page counts the project's tasks by
 * status and updates live over SSE. The page carries no data: it trades the token in its
 * URL fragment (never sent to a server or a log) for a session cookie, then asks the API.
 */
import { STATUSES } from "../store";

export function dashboardPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>lazy</title>
<style>
  :root { color-scheme: light dark; font-family: system-ui, sans-serif; }
  body { margin: 2rem auto; max-width: 56rem; padding: 0 1rem; }
  h1 { font-size: 1.4rem; margin-bottom: .2rem; }
  #state { color: GrayText; font-size: .9rem; }
  ul { list-style: none; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(10rem, 1fr)); gap: .8rem; }
  li { border: 1px solid color-mix(in srgb, currentColor 20%, transparent); border-radius: .6rem; padding: .8rem 1rem; }
  li .n { font-size: 2rem; font-variant-numeric: tabular-nums; display: block; }
  li .s { text-transform: capitalize; color: GrayText; }
  #error { color: #c33; }
</style>
</head>
<body>
<h1>lazy</h1>
<div id="state">connecting…</div>
<p id="error" hidden></p>
<ul id="counts">
${STATUSES.map((s) => `  <li data-status="${s}"><span class="n" data-count="${s}">–</span><span class="s">${s}</span></li>`).join("\n")}
</ul>
<script>
(async () => {
  const state = document.getElementById("state");
  const err = document.getElementById("error");
  const m = location.hash.match(/token=([0-9a-f]+)/);
  if (m) {
    // JSON, like every write the daemon takes (daemon/api-guard.ts).
    await fetch("/api/session", { method: "POST", headers: { authorization: "Bearer " + m[1], "content-type": "application/json" }, body: "{}" });
    history.replaceState(null, "", location.pathname);
  }
  const show = (counts) => {
    for (const [s, n] of Object.entries(counts)) {
      const el = document.querySelector('[data-count="' + s + '"]');
      if (el) el.textContent = String(n);
    }
  };
  const r = await fetch("/api/counts");
  if (r.status === 401) {
    state.textContent = "not signed in";
    err.hidden = false;
    err.textContent = "Open the address printed by: lazy dashboard";
    return;
  }
  show(await r.json());
  const es = new EventSource("/api/events");
  es.addEventListener("counts", (e) => { show(JSON.parse(e.data)); state.textContent = "live"; });
  es.onerror = () => { state.textContent = "reconnecting…"; };
})();
</script>
</body>
</html>`;
}
