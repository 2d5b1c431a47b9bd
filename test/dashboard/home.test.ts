import { afterAll, describe, expect, test } from "bun:test";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { cleanupAll, Project } from "../helpers/lazy";
import { ARGS, CHROMIUM } from "./browser";

let browser: Browser | undefined;

afterAll(async () => {
  await browser?.close();
  await cleanupAll();
});

async function launch(): Promise<Browser> {
  browser ??= await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
  });
  return browser;
}

describe("dashboard home, in real headless Chromium", () => {
  test("task counts by status change on the open page as lazy task add adds tasks", async () => {
    const p = new Project();
    await p.ok(["task", "add", "already here"]);
    const url = (await p.ok(["dashboard"])).stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/#token=[0-9a-f]{64}$/);

    const page = await (await launch()).newPage();
    await page.goto(url);
    const queued = page.locator('[data-count="queued"]');
    await page.waitForFunction(() => document.getElementById("state")?.textContent === "live", undefined, { timeout: 10_000 });
    expect(await queued.textContent()).toBe("1");
    expect(await page.locator('[data-count="running"]').textContent()).toBe("0");
    // The token left the address bar once traded for the session cookie.
    expect(page.url()).not.toContain("token");

    // Pushed to the open page: no reload, no navigation.
    for (const expected of ["2", "3"]) {
      await p.ok(["task", "add", `new task ${expected}`]);
      await page.waitForFunction((n) => document.querySelector('[data-count="queued"]')?.textContent === n, expected, { timeout: 10_000 });
    }
    await page.screenshot({ path: join(tmpdir(), "lazy-dashboard-home.png") });
  });

  test("without the token the page shows nothing of the project", async () => {
    const p = new Project();
    await p.ok(["task", "add", "secret project work"]);
    const url = (await p.ok(["dashboard"])).stdout.trim().replace(/#.*/, "");
    const page = await (await launch()).newContext().then((c) => c.newPage());
    await page.goto(url);
    await page.waitForFunction(() => document.getElementById("state")?.textContent === "not signed in", undefined, { timeout: 10_000 });
    expect(await page.locator('[data-count="queued"]').textContent()).toBe("–");
    expect(await page.locator("#error").textContent()).toContain("lazy dashboard");
  });
});
