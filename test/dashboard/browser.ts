/**
 * Real headless Chromium for the dashboard's suite: a signed-in context (through the address
 * `lazy dashboard` prints, as a user does), and a watch on every page for console errors and
 * failed requests. Screenshots go to test-artifacts/dashboard/ (CI keeps them).
 */

import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import type { Project } from "../helpers/lazy";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// This machine's network is closed: no background traffic, no component updates.
export const ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
export const ARTIFACTS = resolve(import.meta.dir, "../../test-artifacts/dashboard");

let browser: Browser | undefined;
export async function launch(): Promise<Browser> {
  browser ??= await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  return browser;
}
export async function closeBrowser(): Promise<void> {
  await browser?.close();
  browser = undefined;
}

export interface Watched {
  page: Page;
  /** Console errors and failed requests seen so far (a request cancelled by leaving the page is not one). */
  problems: string[];
}

export function watch(page: Page): Watched {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText ?? "";
    // Leaving a page cancels its live stream and any read still under way: not a failure.
    if (why.includes("ERR_ABORTED")) return;
    problems.push(`request failed: ${r.url()} ${why}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return { page, problems };
}

/** A browser context signed in to the project's dashboard, and its origin. */
export async function signedIn(
  p: Project,
  viewport = { width: 1280, height: 800 },
): Promise<{ ctx: BrowserContext; origin: string; page: Watched }> {
  const url = (await p.ok(["dashboard"])).stdout.trim();
  const ctx = await (await launch()).newContext({ viewport });
  const page = watch(await ctx.newPage());
  await page.page.goto(url);
  await page.page.waitForFunction(() => document.getElementById("state")?.textContent === "live", undefined, { timeout: 10_000 });
  return { ctx, origin: new URL(url).origin, page };
}

/** A screenshot of the whole page; `screen`: also what the viewport shows now, as `NAME-screen.png` (a sticky bar, what needs no scrolling). */
export async function shot(page: Page, name: string, screen = false): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  if (screen) await page.screenshot({ path: join(ARTIFACTS, `${name}-screen.png`) });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
