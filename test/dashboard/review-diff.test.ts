/**
 * The task page's review as people expect it from a code review tool (issue 37, point 9), in
 * real headless Chromium at 1280×800 and 390×844, with real Claude Code in the test image and
 * the mock provider as its model:
 * - each diff line shows its old and new numbers; Unified/Split, kept across a reload; a file
 *   marked viewed is ticked in the file list, folded, and still so after a reload;
 * - Accept and Reject sit in the bar at the foot of the viewport with Send review, which shows
 *   only once there is a comment (no `Send review (0)`); a task with no diff has no bar;
 * - while a next turn runs, the last diff stays (marked stale) at the top instead of moving away;
 * - the agent's question (ask_human) leads its task's page, with an answer box;
 * - no raw ISO time on the pages: relative times, the exact time in their title;
 * - the MCP client's session probes in the audit table read as bookkeeping, not errors.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { anthropicProject, bash, launched, settled, settledAs, teardown } from "../helpers/fixtures";
import type { Project } from "../helpers/lazy";
import { until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";
import { closeBrowser, shot, signedIn } from "./browser";

const KEY = `sk-ant-api03-REVIEWDIFF-${"d".repeat(70)}AA`;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY, {
    files: (root) => writeFileSync(join(root, "app.txt"), `${Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n")}\n`),
  }));
  // Lines 2-3 removed, line 8 changed, and a 300-line file: a diff longer than any viewport.
  anthropic.answer(
    bash(
      "I changed app.txt and added big.ts.",
      "sed -i '2,3d' app.txt && sed -i 's/^line 8$/line 8 changed/' app.txt && seq 1 300 | sed 's/.*/export const v& = &;/' > big.ts && git add -A && git commit -qm change",
      "change files",
    ),
  );
  await launched(p, "lines", "Change app.txt and add big.ts");
  await settledAs(p, "lines");
  const d = await p.api("GET", "/api/tasks/lines/diff");
  expect(d.files.map((f: { path: string }) => f.path).sort()).toEqual(["app.txt", "big.ts"]);
}, 600_000);
afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

/** The line numbers a diff line shows (its ::before), as the reader sees them. */
const numbers = (pg: Page, selector: string) =>
  pg
    .locator(selector)
    .first()
    .evaluate((el) => getComputedStyle(el, "::before").content.replace(/^"|"$/g, "").trim().split(/\s+/));

/** The page's text has no ISO time in it (times are relative, the exact one in a title). */
async function noIsoTimes(pg: Page): Promise<void> {
  const text = await pg.evaluate(() => document.querySelector("main")!.textContent);
  expect(text).not.toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d/);
  const titles = await pg.evaluate(() => [...document.querySelectorAll("main time")].map((t) => [t.textContent, t.getAttribute("title")]));
  for (const [shown, title] of titles) {
    expect(shown).toMatch(/(\d+[smhd] ago|in \d+[smhd])$/);
    expect(title).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(UTC[+-]\d\d:\d\d\)$/);
  }
}

/** The element is on screen without scrolling. */
async function inViewport(pg: Page, selector: string, height: number): Promise<void> {
  const box = await pg.locator(selector).boundingBox();
  expect(box, selector).not.toBeNull();
  expect(box!.y).toBeGreaterThanOrEqual(0);
  expect(box!.y + box!.height).toBeLessThanOrEqual(height);
}

describe("the task page's review, at 1280×800 and 390×844", () => {
  test("old and new line numbers; Accept/Reject in the bar; no Send review (0); Split and viewed files kept; relative times; MCP bookkeeping muted", async () => {
    for (const [size, viewport] of [
      ["desktop", DESKTOP],
      ["phone", PHONE],
    ] as const) {
      const { ctx, origin, page } = await signedIn(p, viewport);
      const pg = page.page;
      await pg.goto(`${origin}/tasks/lines`);
      await pg.waitForFunction(() => document.getElementById("status")?.textContent === "done", undefined, { timeout: 10_000 });
      await pg.waitForSelector(".files >> text=big.ts", { timeout: 10_000 });

      // Both numbers: a removed line has its old one, an added line its new one, context both.
      const app = '[data-file]:has(summary:has-text("app.txt"))';
      expect(await numbers(pg, `${app} .hunk [data-k="old:2"]`)).toEqual(["2"]);
      expect(await numbers(pg, `${app} .hunk .a`)).toEqual(["6"]);
      expect(await pg.locator(`${app} .hunk .a`).first().textContent()).toBe("+line 8 changed");
      expect(await numbers(pg, `${app} .hunk [data-k="new:5"]`)).toEqual(["7", "5"]);

      // The bar is on screen without scrolling past the diff: Accept and Reject, and a hint; no Send review (0).
      await inViewport(pg, '.review-bar [data-verb="accept"]', viewport.height);
      await inViewport(pg, '.review-bar [data-verb="reject"]', viewport.height);
      expect(await pg.locator(".review-bar").textContent()).toContain("Click a line of the diff to comment on it.");
      expect(await pg.getByRole("button", { name: /Send review/ }).count()).toBe(0);
      await shot(pg, `review-diff-${size}`, true);

      // A comment: Send review (1) in the bar, on screen.
      await pg.locator(`${app} .hunk [data-k="new:6"]`).click();
      await pg.getByLabel("Comment on app.txt:6").fill("why changed?");
      await pg.getByRole("button", { name: "Add comment" }).click();
      await inViewport(pg, ".review-bar #send-review", viewport.height);
      expect(await pg.locator("#send-review").textContent()).toBe("Send review (1)");

      // Times read relative, the exact one in a title (the audit's rows, the head's why).
      await pg.waitForSelector("#audit table", { timeout: 10_000 });
      await noIsoTimes(pg);
      // The MCP client's session probes are bookkeeping: muted and said so, never an error.
      const probes = await pg.evaluate(() =>
        [...document.querySelectorAll("#audit tbody tr")]
          .filter(
            (tr) =>
              /^(GET|POST|DELETE) \/mcp/.test(tr.children[1]!.textContent ?? "") && /^40[05]$/.test(tr.children[2]!.textContent ?? ""),
          )
          .map((tr) => ({
            kept: tr.classList.contains("bookkeeping"),
            error: tr.children[2]!.classList.contains("error"),
            text: tr.textContent,
          })),
      );
      for (const r of probes) expect(r, r.text ?? "").toMatchObject({ kept: true, error: false });
      if (size === "desktop") {
        await pg.locator("#audit").scrollIntoViewIfNeeded();
        await shot(pg, "review-diff-audit");
      }
      expect(page.problems).toEqual([]);
      await ctx.close();
    }

    // Split, and a viewed file: both kept across a reload (this browser's storage).
    const { ctx, origin, page } = await signedIn(p, DESKTOP);
    const pg = page.page;
    await pg.goto(`${origin}/tasks/lines`);
    await pg.waitForSelector(".files >> text=app.txt", { timeout: 10_000 });
    await pg.getByRole("button", { name: "Split" }).click();
    const app = '[data-file]:has(summary:has-text("app.txt"))';
    // The changed line faces the line it replaced: old 8 on the left, new 6 on the right.
    const row = pg.locator(`${app} .hunk.split .srow:has([data-k="new:6"])`);
    expect(await row.locator(".d").textContent()).toBe("-line 8");
    expect(await row.locator(".a").textContent()).toBe("+line 8 changed");
    await pg.getByLabel("Viewed app.txt").check();
    expect(await pg.locator('.files li.viewed[data-path="app.txt"] .mark').textContent()).toBe("✓");
    expect(await pg.locator(`${app}`).getAttribute("open")).toBeNull();
    expect(await pg.locator("#viewed-count").textContent()).toBe("1 of 2 viewed");
    await shot(pg, "review-diff-split", true);
    await pg.reload();
    await pg.waitForSelector(".hunk.split", { state: "attached", timeout: 10_000 });
    expect(await pg.getByRole("button", { name: "Split" }).getAttribute("aria-pressed")).toBe("true");
    expect(await pg.locator('.files li.viewed[data-path="app.txt"]').count()).toBe(1);
    expect(await pg.locator("#viewed-count").textContent()).toBe("1 of 2 viewed");
    // Side by side on a phone: narrow columns, no sideways scroll.
    await pg.setViewportSize(PHONE);
    expect(await pg.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
    await shot(pg, "review-diff-split-phone", true);
    await pg.getByRole("button", { name: "Unified" }).click();
    await pg.waitForSelector(".hunk:not(.split)", { state: "attached" });
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 300_000);

  test("while a next turn runs the last diff stays at the top, marked stale; it is fresh again when the turn ends", async () => {
    const { ctx, origin, page } = await signedIn(p, PHONE);
    const pg = page.page;
    await pg.goto(`${origin}/tasks/lines`);
    await pg.waitForSelector(".files >> text=big.ts", { timeout: 10_000 });
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    await p.ok(["send", "lines", "one more thing"]);
    await anthropic.waitFor(1, 120_000);
    await pg.waitForFunction(() => document.getElementById("status")?.textContent === "running", undefined, { timeout: 10_000 });
    // Still there, first, and said to be the last turn's.
    await pg.waitForSelector("#diff.stale .stale-note", { timeout: 10_000 });
    expect(await pg.locator(".stale-note").textContent()).toContain("A turn is running");
    expect(await pg.locator(".files").textContent()).toContain("app.txt");
    const order = await pg.evaluate(() => [...document.querySelectorAll("main > section")].map((s) => s.getAttribute("aria-labelledby")));
    expect(order[0]).toBe("h-diff");
    await noIsoTimes(pg);
    expect(await pg.locator("#why").textContent()).toMatch(/^Its agent is working \(started \d+[smhd] ago\)\.$/);
    await shot(pg, "review-diff-stale-phone", true);
    await p.ok(["stop", "lines"]);
    anthropic.behavior = { kind: "ok" };
    await until(async () => (await p.api("GET", "/api/tasks/lines")).task.status === "waiting" || undefined, 60_000, "the stop");
    await pg.waitForFunction(() => !document.getElementById("diff")?.classList.contains("stale"), undefined, { timeout: 10_000 });
    expect(await pg.locator(".stale-note").isHidden()).toBe(true);
    expect(await pg.locator(".files").textContent()).toContain("app.txt");
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 300_000);

  test("the agent's question leads its task's page, with an answer box; no diff, no review bar", async () => {
    anthropic.reset();
    const question = "Should the button be blue\nor red?";
    anthropic.reply = { text: "I asked.", toolUse: { name: "mcp__lazy__ask_human", input: { question } } };
    await launched(p, "asker", "Paint the button");
    expect((await settled(p, "asker")).task.status).toBe("waiting");
    for (const [size, viewport] of [
      ["desktop", DESKTOP],
      ["phone", PHONE],
    ] as const) {
      const { ctx, origin, page } = await signedIn(p, viewport);
      const pg = page.page;
      await pg.goto(`${origin}/tasks/asker`);
      await pg.waitForSelector("#asked:not([hidden])", { timeout: 10_000 });
      expect(await pg.locator("#question").textContent()).toBe(question);
      await inViewport(pg, "#question", viewport.height);
      await inViewport(pg, "#answer button", viewport.height);
      expect(await pg.locator("#asked-when time").textContent()).toMatch(/^asked \d+[smhd] ago$/);
      // The task changed nothing: no review bar, no Send review (0).
      await pg.waitForSelector("#diff >> text=has no commits the project's HEAD lacks", { timeout: 10_000 });
      expect(await pg.locator(".review-bar").isHidden()).toBe(true);
      expect(await pg.getByRole("button", { name: /Send review/ }).count()).toBe(0);
      await noIsoTimes(pg);
      await shot(pg, `review-question-${size}`, true);
      if (size === "phone") {
        // The answer is the agent's next message; the question goes once answered.
        anthropic.answer({ text: "Painted it red." });
        await pg.getByLabel("Your answer").fill("red");
        await pg.locator("#answer").getByRole("button", { name: "Answer" }).click();
        await pg.waitForFunction(() => document.getElementById("notice")?.textContent?.startsWith("Answer: done"), undefined, {
          timeout: 120_000,
        });
        await settledAs(p, "asker");
        await pg.waitForSelector("#asked", { state: "hidden", timeout: 10_000 });
        expect(anthropic.received.some((r) => r.method === "POST" && r.body.includes("red"))).toBe(true);
      }
      expect(page.problems).toEqual([]);
      await ctx.close();
    }
  }, 600_000);
});
