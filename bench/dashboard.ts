/**
 * The dashboard's performance targets (issue 20), in headless Chromium on loopback:
 *   1. Home and the task list with 10,000 tasks: DOMContentLoaded ≤ 300 ms p50, and ≤ 3× a static
 *      HTML page of the same size (the rendered page, saved) — also "rows shown", when the data is in.
 *   2. An event reaches an open task page ≤ 500 ms p50 after the daemon records it (its `at`).
 *   3. The shipped assets ≤ 150 KB gzipped in all.
 * Rounds interleave the pages so the VM's slow minutes hit them alike. `bun bench/dashboard.ts [rounds]`.
 */

import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { ARGS } from "../test/dashboard/browser";
import { cleanupAll, Project } from "../test/helpers/lazy";
import { fmt, pct } from "./lib";

const ROUNDS = Number(process.argv[2] ?? 15);
const TASKS = 10_000;

const p = new Project();
Bun.spawnSync(["git", "-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
  cwd: p.root,
});
await p.ok(["daemon", "start"]);
const url = (await p.ok(["dashboard"])).stdout.trim();
const origin = new URL(url).origin;

// 10,000 tasks through the API, 16 at a time.
const t0 = performance.now();
for (let i = 0; i < TASKS; i += 16)
  await Promise.all(
    Array.from({ length: Math.min(16, TASKS - i) }, (_, j) =>
      p.api("POST", "/api/tasks", { prompt: `Bench task ${i + j}: tidy module ${(i + j) % 97} and its tests`, code: `bench-${i + j}` }),
    ),
  );
console.log(`added ${TASKS} tasks in ${fmt(performance.now() - t0)}`);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ARGS });
const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
const page = await ctx.newPage();
await page.goto(url);
await page.waitForFunction(() => document.getElementById("state")?.textContent === "live");

// The static twins: each page as rendered, saved, and served from loopback by a plain Bun.serve.
const statics = new Map<string, string>();
for (const path of ["/", "/tasks"]) {
  await page.goto(`${origin}${path}`);
  await page.waitForSelector(path === "/" ? '[data-count="queued"]:not(:empty)' : "#tasks [data-task]");
  await page.waitForFunction(
    () => document.querySelector('[data-count="queued"]')?.textContent !== "–" || document.querySelector("#tasks [data-task]"),
  );
  statics.set(path, (await page.content()).replace(/<script[^>]*><\/script>/g, "").replace(/<link[^>]*>/g, ""));
}
const twin = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (r) => new Response(statics.get(new URL(r.url).pathname) ?? "", { headers: { "content-type": "text/html; charset=utf-8" } }),
});

const dcl = async (u: string, ready?: string) => {
  const start = Date.now();
  await page.goto(u, { waitUntil: "domcontentloaded" });
  const t = await page.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
    return n.domContentLoadedEventEnd;
  });
  let shown = NaN;
  if (ready) {
    await page.waitForSelector(ready);
    shown = Date.now() - start;
  }
  return { t, shown };
};
const res: Record<string, number[]> = {};
const add = (k: string, v: number) => {
  res[k] ??= [];
  res[k].push(v);
};
for (let r = 0; r < ROUNDS; r++) {
  for (const [path, ready] of [
    ["/", "#budget p"],
    ["/tasks", "#tasks [data-task]"],
  ] as const) {
    const d = await dcl(`${origin}${path}`, ready);
    add(`${path} DCL`, d.t);
    add(`${path} rows shown`, d.shown);
    add(`${path} static DCL`, (await dcl(`http://127.0.0.1:${twin.port}${path}`)).t);
  }
}

// Event → open task page: a fresh task a round, its page open and live, then closed through the API.
for (let r = 0; r < ROUNDS; r++) {
  const code = `lat-${r}`;
  await p.api("POST", "/api/tasks", { prompt: "latency probe", code });
  await page.goto(`${origin}/tasks/${code}`);
  await page.waitForSelector('#events li[data-kind="created"]');
  await page.waitForFunction(() => document.getElementById("state")?.textContent === "live");
  await page.evaluate(() => {
    new MutationObserver((ms) => {
      for (const m of ms)
        for (const n of m.addedNodes) if ((n as HTMLElement).dataset?.kind === "status") (window as any).seen ??= Date.now();
    }).observe(document.getElementById("events")!, { childList: true });
  });
  await p.api("POST", `/api/tasks/${code}/close`, {});
  await page.waitForFunction(() => (window as any).seen, undefined, { timeout: 10_000 });
  const seen = await page.evaluate(() => (window as any).seen as number);
  const ev = (await p.api<{ events: { kind: string; at: string }[] }>("GET", `/api/tasks/${code}/events`)).events.find(
    (e) => e.kind === "status",
  )!;
  add("event → task page", seen - Date.parse(ev.at));
}

// Assets: what the pages load from the daemon, gzipped.
const html = await (await fetch(`${origin}/tasks`)).text();
const files = [...html.matchAll(/<(?:script|link)[^>]*?(?:src|href)="(\/[^"]+)"/g)].map((m) => m[1]!);
let gz = 0;
for (const f of files) gz += gzipSync(new Uint8Array(await (await fetch(`${origin}${f}`)).arrayBuffer())).length;

console.log(`\n${ROUNDS} rounds, ${TASKS} tasks; p50 / p90`);
for (const [k, v] of Object.entries(res)) console.log(`  ${k.padEnd(22)} ${fmt(pct(v, 50)).padStart(10)} ${fmt(pct(v, 90)).padStart(10)}`);
for (const path of ["/", "/tasks"])
  console.log(
    `  ${path} DCL / static DCL  ${(pct(res[`${path} DCL`]!, 50) / pct(res[`${path} static DCL`]!, 50)).toFixed(2)}× (target ≤ 3×; static page ${statics.get(path)!.length} bytes)`,
  );
console.log(`  assets ${files.join(", ")}: ${(gz / 1024).toFixed(1)} KB gzipped (target ≤ 150 KB)`);

twin.stop(true);
await browser.close();
await cleanupAll();
