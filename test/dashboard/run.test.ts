/**
 * A task run from the dashboard, end to end (issue 20): real Claude Code in the test image,
 * the mock provider's reply a Bash tool_use that writes and commits a file. The task page shows
 * its events live, the diff shows the file, and Accept from the page merges it: the CLI sees
 * `accepted`. Needs a real Docker engine (CI starts one).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { anthropicProject, commits, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";
import { closeBrowser, shot, signedIn } from "./browser";

const KEY = "sk-ant-api03-DASHRUN-" + "r".repeat(74) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;
beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

describe("a task run from its page", () => {
  test("Start from the page: events live, the diff shows the committed file, Accept merges it", async () => {
    anthropic.answer(commits("greeting.txt", "hello from the agent\\n", "I committed greeting.txt."));
    await p.ok(["task", "add", "Add greeting.txt and commit it", "--code", "greet"]);
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/tasks/greet`);
    await pg.waitForFunction(() => document.getElementById("status")?.textContent === "queued", undefined, { timeout: 10_000 });
    expect(await pg.locator("#why").textContent()).toContain("Not started yet");
    // Only what a queued task allows is offered.
    const enabled = () =>
      pg.evaluate(() =>
        [...document.querySelectorAll<HTMLButtonElement>(".actions button")].filter((b) => !b.disabled).map((b) => b.textContent),
      );
    await pg.waitForFunction(() => document.querySelector<HTMLButtonElement>('[data-verb="accept"]')?.disabled === true, undefined, {
      timeout: 5000,
    });
    expect(await enabled()).toEqual(["Start", "Reject", "Close"]);
    expect(await pg.locator("#send button").isDisabled()).toBe(true);

    // Start with the page's button (keyboard: focus it and press Enter).
    await pg.getByRole("button", { name: "Start" }).focus();
    await pg.keyboard.press("Enter");
    // The events arrive while the page stays open: no reload.
    await pg.waitForSelector('#events li[data-kind="tool"] >> text=[Bash]', { timeout: 600_000 });
    await pg.waitForSelector("#events li >> text=I committed greeting.txt.", { timeout: 120_000 });
    await pg.waitForFunction(() => document.getElementById("status")?.textContent === "done", undefined, { timeout: 120_000 });
    expect(await pg.locator("#why").textContent()).toContain("review the diff");
    // The turn is over: Start's notice is gone, and a done task offers its own actions.
    await pg.waitForFunction(() => document.getElementById("notice")?.textContent === "", undefined, { timeout: 5000 });
    expect(await enabled()).toEqual(["Start", "Accept", "Reject", "Close"]);
    expect(await pg.locator("#send button").isDisabled()).toBe(false);

    // The diff: the file first, then its hunk.
    await pg.waitForSelector(".files >> text=greeting.txt", { timeout: 10_000 });
    expect(await pg.locator(".hunk .a").first().textContent()).toBe("+hello from the agent");
    // The audit rows of its turn.
    await pg.waitForSelector("#audit table", { timeout: 10_000 });
    await shot(pg, "task-done-desktop");

    // Accept from the bar at the foot of the viewport (the Actions section has the same button).
    await pg.locator('.review-bar [data-verb="accept"]').click();
    await pg.waitForFunction(() => document.getElementById("notice")?.textContent?.includes("the task is accepted"), undefined, {
      timeout: 60_000,
    });
    expect((await p.json(["task", "show", "greet"])).task.status).toBe("accepted");
    expect(sh(p.root, "git log --format=%s main").out).toContain("add greeting");
    await pg.waitForFunction(() => document.getElementById("status")?.textContent === "accepted", undefined, { timeout: 5000 });

    // An accepted task offers nothing more; its diff is what the merge brought in.
    await pg.waitForFunction(() => document.querySelector<HTMLButtonElement>('[data-verb="stop"]')?.disabled === true, undefined, {
      timeout: 5000,
    });
    expect(await enabled()).toEqual([]);
    await pg.waitForSelector("#diff >> text=Merged as", { timeout: 10_000 });
    expect(await pg.locator(".files").textContent()).toContain("greeting.txt");
    expect(await pg.locator(".hunk .a").first().textContent()).toBe("+hello from the agent");
    // A verb the rules refuse, asked anyway, answers with the CLI's words.
    const refused = await pg.evaluate(async () => {
      const r = await fetch("/api/tasks/greet/stop", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      return { status: r.status, body: await r.text() };
    });
    expect(refused.status).toBe(409);
    expect(refused.body).toContain("Task greet is accepted, not running.");
    expect(page.problems.filter((x) => !x.includes("409"))).toEqual([]);
    await ctx.close();
  }, 900_000);
});
