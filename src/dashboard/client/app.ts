/**
 * The dashboard's client script (bundled for the browser at build time, dashboard/bundle.ts):
 * signs in once with the token from the URL fragment, then runs the page the body names.
 */

import { group } from "./compare";
import { $ } from "./dom";
import { expiryBanner } from "./expiry-banner";
import { home } from "./home";
import { task } from "./task";
import { tasks } from "./tasks";
import { usage } from "./usage";
import { watch } from "./watch";

const PAGES: Record<string, () => Promise<void>> = { home, tasks, task, watch, usage, group };

async function main(): Promise<void> {
  const m = location.hash.match(/token=([0-9a-f]+)/);
  if (m) {
    // The token leaves the address bar at once, traded for an HttpOnly cookie (JSON, like every write).
    history.replaceState(null, "", location.pathname + location.search);
    await fetch("/api/session", {
      method: "POST",
      headers: { authorization: `Bearer ${m[1]}`, "content-type": "application/json" },
      body: "{}",
    });
  }
  // Signed in? (/api/health needs the session; a 401 here is the one expected failure, so ask without noise.)
  const r = await fetch("/api/health");
  if (r.status === 401) {
    $("state").textContent = "not signed in";
    const err = document.getElementById("error");
    if (err) {
      err.hidden = false;
      err.textContent = "Open the address printed by: lazy dashboard";
    }
    return;
  }
  const page = document.body.dataset.page ?? "home";
  if (page === "home") void expiryBanner();
  await PAGES[page]?.();
}

void main();
