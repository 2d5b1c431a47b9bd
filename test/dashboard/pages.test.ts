/**
 * The dashboard's pages (issue 20), in real headless Chromium against a real daemon and a real
 * mock provider on loopback: tasks added from the page and from the CLI, the Watch page's net>
 * lines, the Usage page's windows and PAUSED mark, the guard on every new route, and every page
 * at a desktop and a phone size with no console error, no failed request and no sideways scroll.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { oneRequest } from "../helpers/fixtures";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { closeBrowser, shot, signedIn, watch } from "./browser";

const KEY = "sk-ant-api03-DASHBOARD-" + "d".repeat(72) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = new Project({
    toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[usage_pause]\nthreshold = 90\n\n[budget]\nper_day_tokens = 1000000\n`,
  });
  Bun.spawnSync(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
    cwd: p.root,
  });
  await p.setCredential("anthropic", KEY);
  await p.ok(["task", "add", "Fix the login form so a wrong password says so", "--code", "fix-login"]);
});

afterAll(async () => {
  await closeBrowser();
  await cleanupAll(anthropic);
});

/** One request through the proxy on a task's grant (or the host's). */
const ask = (task?: string) => oneRequest(p, task);

const codes = async () => (await p.json<{ code: string | null }[]>(["task", "list"])).map((t) => t.code);

describe("the dashboard's pages", () => {
  test("a task added from the Tasks page is in lazy task list; one added with the CLI shows in the open page, pushed to it", async () => {
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/tasks`);
    await pg.waitForSelector("[data-task] >> text=Fix the login form");
    // Keyboard and labels: the form is reached by its labels, submitted by its button.
    await pg.getByText("Add a task").click();
    await pg.getByLabel("Prompt").fill("Write the release notes for 0.2");
    await pg.getByLabel("Code (optional)").fill("notes");
    await pg.getByRole("button", { name: "Add task" }).click();
    await pg.waitForFunction(() => document.getElementById("add-result")?.textContent === "Added notes.", undefined, { timeout: 5000 });
    expect(await codes()).toContain("notes");
    await pg.waitForSelector("[data-task] >> text=Write the release notes");

    // A bad code gets the CLI's own words.
    await pg.getByLabel("Prompt").fill("again");
    await pg.getByLabel("Code (optional)").fill("notes");
    await pg.getByRole("button", { name: "Add task" }).click();
    await pg.waitForFunction(
      () => document.getElementById("add-result")?.textContent?.includes('A task with code "notes" already exists; pick another code.'),
      undefined,
      { timeout: 5000 },
    );

    // Pushed to the open page, which nothing reloads.
    await p.ok(["task", "add", "Added at the terminal", "--code", "from-cli"]);
    await pg.waitForSelector("[data-task] >> text=Added at the terminal", { timeout: 10_000 });

    // Filter and search go to the daemon.
    await pg.getByLabel("Search").fill("release");
    await pg.waitForFunction(() => document.querySelectorAll("[data-task]").length === 1, undefined, { timeout: 3000 });
    expect(await pg.locator("#total").textContent()).toContain("1 task(s)");
    expect(page.problems.filter((x) => !x.includes("409"))).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("Watch shows a net> line for a request made while it is open; Usage shows 42 % and PAUSED", async () => {
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/watch`);
    await pg.waitForFunction(() => document.getElementById("state")?.textContent === "live", undefined, { timeout: 5000 });
    await Bun.sleep(200);
    anthropic.reset();
    anthropic.rateLimitHeaders = {
      "anthropic-ratelimit-unified-status": "allowed_warning",
      "anthropic-ratelimit-unified-5h-utilization": "0.42",
      "anthropic-ratelimit-unified-5h-reset": String(Math.floor(Date.now() / 1000) + 3 * 3600),
      "anthropic-ratelimit-unified-7d-utilization": "0.95",
      "anthropic-ratelimit-unified-7d-reset": String(Math.floor(Date.now() / 1000) + 2 * 86400),
    };
    expect(await ask("fix-login")).toBe(200);
    const line = await pg.waitForSelector("#watch li.net", { timeout: 3000 });
    expect(await line.textContent()).toMatch(/^\d\d:\d\d:\d\d {2}fix-login {2}net> agent claude POST \/v1\/messages 200 \d+ms/);

    // The task filter follows lazy watch's rules and words.
    await pg.getByLabel(/^Tasks/).fill("ab");
    await pg.getByRole("button", { name: "Follow" }).click();
    await pg.waitForFunction(() => document.getElementById("error")?.textContent?.includes('"ab" is too short to name a task'), undefined, {
      timeout: 3000,
    });

    await pg.goto(`${origin}/usage`);
    await pg.waitForSelector("text=42 %", { timeout: 5000 });
    expect(await pg.locator(".paused").first().textContent()).toContain("PAUSED");
    expect(await pg.locator(".window", { hasText: "five_hour" }).locator("progress").getAttribute("value")).toBe("42");
    // A countdown to the reset, ticking.
    // (A live reload may redraw it within the same second: wait for the next ticks, not one.)
    const first = await pg.locator("[data-resets]").first().textContent();
    await pg.waitForFunction((f) => document.querySelector("[data-resets]")?.textContent !== f, first, { timeout: 3500 });
    expect(await pg.locator("[data-resets]").first().textContent()).not.toBe(first);
    // The one failure is the refused filter's answer (400), which the page shows.
    expect(page.problems.filter((x) => !x.includes("/api/stats/audit?task=ab") && !x.includes("status of 400"))).toEqual([]);
    await ctx.close();
  }, 60_000);

  test("a POST with the session cookie from Origin evil.example, and any request with Host evil.example, get 403 and change nothing", async () => {
    await p.ok(["daemon", "start"]);
    const base = `http://127.0.0.1:${p.runtime()!.api.port}`;
    const cookie = `lazy_session=${p.token()}`;
    const before = await p.json(["task", "list"]);
    for (const [path, body] of [
      ["/api/tasks", { prompt: "planted", code: "planted" }],
      ["/api/tasks/fix-login/close", {}],
      ["/api/tasks/fix-login/budget", { tokens: 5 }],
    ] as const) {
      const r = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { cookie, origin: "http://evil.example", "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(r.status).toBe(403);
    }
    for (const path of [
      "/",
      "/tasks",
      "/tasks/fix-login",
      "/watch",
      "/usage",
      "/api/board/tasks",
      "/api/board/home",
      "/api/tasks/fix-login/diff",
    ]) {
      const r = await fetch(`${base}${path}`, { headers: { cookie, host: "evil.example" } });
      expect(r.status, path).toBe(403);
    }
    const post = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { cookie, host: "evil.example", "content-type": "application/json", origin: "http://evil.example" },
      body: JSON.stringify({ prompt: "planted" }),
    });
    expect(post.status).toBe(403);
    expect(await p.json(["task", "list"])).toEqual(before);
  }, 30_000);

  test("pages send a CSP with no other origin and no inline script, and carry no token", async () => {
    await p.ok(["daemon", "start"]);
    const base = `http://127.0.0.1:${p.runtime()!.api.port}`;
    for (const path of ["/", "/tasks", "/tasks/fix-login", "/watch", "/usage"]) {
      const r = await fetch(`${base}${path}`);
      expect(r.status).toBe(200);
      const csp = r.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      const html = await r.text();
      expect(html).not.toContain(p.token());
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
      expect(html).not.toMatch(/https?:\/\//); // nothing from another origin
    }
    expect(p.log()).not.toContain(p.token());
  });

  test("the open page follows a daemon restart by itself: a task added afterwards shows without a reload", async () => {
    const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const port = probe.port;
    probe.stop(true);
    const q = new Project({ toml: `[server]\nport = ${port}\n` });
    await q.ok(["task", "add", "before the restart"]);
    const { ctx, page } = await signedIn(q);
    await page.page.waitForFunction(() => document.querySelector('[data-count="queued"]')?.textContent === "1", undefined, {
      timeout: 5000,
    });
    await q.ok(["daemon", "restart"]);
    await q.ok(["task", "add", "after the restart"]);
    await page.page.waitForFunction(() => document.querySelector('[data-count="queued"]')?.textContent === "2", undefined, {
      timeout: 15_000,
    });
    expect(await page.page.locator("#state").textContent()).toBe("live");
    await ctx.close();
  }, 60_000);

  for (const [label, viewport] of [
    ["desktop", { width: 1280, height: 800 }],
    ["phone", { width: 390, height: 844 }],
  ] as const)
    test(`every page at ${viewport.width}×${viewport.height}: no console error, no failed request, no sideways scroll`, async () => {
      const { ctx, origin, page } = await signedIn(p, viewport);
      for (const [name, path] of [
        ["home", "/"],
        ["tasks", "/tasks"],
        ["task", "/tasks/fix-login"],
        ["watch", "/watch"],
        ["usage", "/usage"],
      ] as const) {
        const w = watch(await ctx.newPage());
        await w.page.goto(`${origin}${path}`);
        await w.page.waitForFunction(() => document.getElementById("state")?.textContent === "live", undefined, { timeout: 10_000 });
        await w.page.waitForLoadState("networkidle").catch(() => {});
        await Bun.sleep(300);
        const { scroll, width } = await w.page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
        expect(scroll, `${name} scrolls sideways`).toBeLessThanOrEqual(width);
        await shot(w.page, `${name}-${label}`);
        expect(w.problems, name).toEqual([]);
        await w.page.close();
      }
      expect(page.problems).toEqual([]);
      await ctx.close();
    }, 90_000);
});
