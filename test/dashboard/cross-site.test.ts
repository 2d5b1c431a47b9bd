/**
 * Issue 17, finding 6, as it happened: a page served from another port of 127.0.0.1 (a dev server
 * an agent wrote, say), opened in the browser that is signed in to the dashboard, auto-submits
 * forms at the daemon. SameSite=Strict does not stop it: every port of one host is one site.
 * Real headless Chromium, real daemon; the attacker's page is a Bun.serve on loopback port 0.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { type Browser, type BrowserContext, chromium } from "playwright-core";
import { cleanupAll, Project } from "../helpers/lazy";
import { ARGS, CHROMIUM } from "./browser";

const browsers: Browser[] = [];
const servers: { stop(force: boolean): unknown }[] = [];

afterAll(async () => {
  for (const s of servers) s.stop(true);
  await Promise.all(browsers.map((b) => b.close()));
  await cleanupAll();
});

async function launch(extra: string[] = []): Promise<Browser> {
  const b = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...ARGS, ...extra] });
  browsers.push(b);
  return b;
}

interface Task {
  code: string | null;
  title: string;
  status: string;
}

/** A context signed in to the project's dashboard, the way a user is: through its printed URL. */
async function signedIn(p: Project, browser: Browser): Promise<{ ctx: BrowserContext; origin: string }> {
  const url = (await p.ok(["dashboard"])).stdout.trim();
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById("state")?.textContent === "live", undefined, { timeout: 10_000 });
  expect((await ctx.cookies()).map((c) => c.name)).toContain("lazy_session");
  return { ctx, origin: new URL(url).origin };
}

describe("the dashboard's cookie cannot be borrowed by another local page", () => {
  test("an auto-submitting page on another loopback port creates nothing and closes nothing", async () => {
    const p = new Project();
    await p.ok(["task", "add", "closed by a form?", "--code", "victim-form"]);
    await p.ok(["task", "add", "closed by a fetch?", "--code", "victim-fetch"]);
    const browser = await launch();
    const { ctx, origin } = await signedIn(p, browser);

    // What a hostile dev server would serve: two forms into hidden frames, and no-cors fetches
    // (a text/plain body and a bodiless POST are "simple": the browser sends them unasked).
    const html = `<!doctype html><body>
<iframe name="f1"></iframe><iframe name="f2"></iframe>
<form id="create" method="POST" action="${origin}/api/tasks" target="f1"><input name="prompt" value="planted by a form"><input name="code" value="planted-form"></form>
<form id="close" method="POST" action="${origin}/api/tasks/victim-form/close" target="f2"></form>
<script>
window.done = 0;
for (const f of document.querySelectorAll("iframe")) f.addEventListener("load", () => window.done++);
document.getElementById("create").submit();
document.getElementById("close").submit();
const opts = { method: "POST", mode: "no-cors", credentials: "include" };
fetch("${origin}/api/tasks/victim-fetch/close", opts).finally(() => window.done++);
fetch("${origin}/api/tasks", { ...opts, headers: { "content-type": "text/plain" }, body: JSON.stringify({ prompt: "planted by a fetch", code: "planted-fetch" }) }).finally(() => window.done++);
</script></body>`;
    const evil = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(html, { headers: { "content-type": "text/html" } }),
    });
    servers.push(evil);
    const page = await ctx.newPage();
    await page.goto(`http://127.0.0.1:${evil.port}/`);
    await page.waitForFunction(() => (window as unknown as { done: number }).done === 4, undefined, { timeout: 10_000 });

    const tasks = await p.json<Task[]>(["task", "list"]);
    expect(tasks.map((t) => [t.code, t.status])).toEqual([
      ["victim-form", "queued"],
      ["victim-fetch", "queued"],
    ]);

    // The frame shows the daemon's refusal, which says what happened and what to do.
    const frame = page.frame({ name: "f1" })!;
    const shown = JSON.parse((await frame.locator("body").textContent()) ?? "{}") as { error?: { code: string; message: string } };
    expect(shown.error?.code).toBe("forbidden");
    await ctx.close();
  });

  test("the dashboard's own page can still write with its cookie (a JSON POST)", async () => {
    const p = new Project();
    const browser = await launch();
    const { ctx } = await signedIn(p, browser);
    const page = ctx.pages()[0]!;
    const status = await page.evaluate(async () => {
      const r = await fetch("/api/tasks", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt: "from the dashboard", code: "dash" }),
      });
      return r.status;
    });
    expect(status).toBe(201);
    // The page's live counts follow: the same cookie reads, too.
    await page.waitForFunction(() => document.querySelector('[data-count="queued"]')?.textContent === "1", undefined, { timeout: 5000 });
    expect((await p.json<Task[]>(["task", "list"])).map((t) => t.code)).toEqual(["dash"]);
    await ctx.close();
  });

  test("DNS rebinding: evil.example resolving to the daemon gets 403, page and API", async () => {
    const p = new Project();
    await p.ok(["daemon", "start"]);
    const port = p.runtime()!.api.port;
    // Chromium's own resolver maps the name to loopback: nothing leaves the machine.
    const browser = await launch(["--host-resolver-rules=MAP evil.example 127.0.0.1"]);
    const page = await (await browser.newContext()).newPage();
    const res = await page.goto(`http://evil.example:${port}/`);
    expect(res?.status()).toBe(403);
    expect(await page.locator("body").textContent()).toContain("evil.example");
    const api = await page.evaluate(async () => (await fetch("/api/health")).status);
    expect(api).toBe(403);
  });
});
