/**
 * Reading and reviewing an agent's work (issue 30), with real Claude Code in the test image and
 * the mock provider as its model:
 * - a Bash call's output (what `echo` printed in the container) is kept with the call and shown
 *   under it in `lazy logs` and on the task page;
 * - once the turn is done, the task page shows the diff first; two comments on two lines, Send
 *   review: the model's next request carries both, each with its file and line;
 * - `lazy send T --review F`: a comment on a line the diff does not show is refused with the
 *   reason and nothing is sent; a good file is sent as the next turn;
 * - Home lists the done task to review, and an agent's question (ask_human) in full with a
 *   reply box whose reply is the agent's next message.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { anthropicProject, bash, launched, settled, settledAs, teardown } from "../helpers/fixtures";
import { never, type Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";
import { closeBrowser, shot, signedIn } from "./browser";

const KEY = `sk-ant-api03-REVIEW-${"r".repeat(74)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;
beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

const posts = () => anthropic.received.filter((r) => r.method === "POST" && r.path.startsWith("/v1/messages"));

describe("reviewing a task's work", () => {
  test("a Bash call's output in lazy logs and on the page; two comments on the page's diff reach the model with file and line; lazy send --review", async () => {
    anthropic.answer(
      bash(
        "I wrote notes.txt.",
        "printf 'alpha\\nbeta\\ngamma\\n' > notes.txt && git add notes.txt && git commit -qm notes && echo OUTPUT-OF-THE-CALL-42 && echo second line",
        "write notes",
      ),
    );
    await launched(p, "notes", "Write notes.txt");
    await settledAs(p, "notes");

    // lazy logs: the call readable (its command, not JSON), its output under it, indented.
    const log = (await p.ok(["logs", "notes"])).stdout;
    const lines = log.split("\n");
    const call = lines.findIndex((l) => l.includes("[Bash] printf 'alpha"));
    expect(call, log).toBeGreaterThanOrEqual(0);
    expect(log).not.toContain('{"command"');
    const out = lines.findIndex((l) => /^\d\d:\d\d:\d\d {2}└ OUTPUT-OF-THE-CALL-42$/.test(l));
    expect(out, log).toBeGreaterThan(call);
    expect(lines[out + 1]).toBe(`${" ".repeat(12)}second line`);

    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;

    // Home: the done task waits for review.
    await pg.goto(`${origin}/`);
    await pg.waitForSelector("#inbox-review >> text=Write notes.txt", { timeout: 10_000 });

    await pg.goto(`${origin}/tasks/notes`);
    await pg.waitForFunction(() => document.getElementById("status")?.textContent === "done", undefined, { timeout: 10_000 });
    // The output, under its call, on the page.
    const shown = await pg.locator('#events li[data-kind="output"]').first().textContent();
    expect(shown).toContain("└ OUTPUT-OF-THE-CALL-42");
    expect(shown).toContain("second line");
    // The diff comes first: right under the task's head, before the actions and the events.
    await pg.waitForSelector(".files >> text=notes.txt", { timeout: 10_000 });
    const order = await pg.evaluate(() => [...document.querySelectorAll("main > section")].map((s) => s.getAttribute("aria-labelledby")));
    expect(order[0]).toBe("h-diff");
    expect(order.indexOf("h-diff")).toBeLessThan(order.indexOf("h-events"));

    // Two comments on two lines of the diff.
    anthropic.answer({ text: "Thanks, I will look at both." });
    await pg.locator('.hunk [data-k="new:1"]').click();
    await pg.getByLabel("Comment on notes.txt:1").fill("rename alpha to first");
    await pg.getByRole("button", { name: "Add comment" }).click();
    await pg.locator('.hunk [data-k="new:3"]').click();
    await pg.getByLabel("Comment on notes.txt:3").fill("gamma needs a test");
    await pg.getByRole("button", { name: "Add comment" }).click();
    expect(await pg.locator(".comment").count()).toBe(2);
    await shot(pg, "review-two-comments");
    await pg.getByRole("button", { name: "Send review (2)" }).click();
    await pg.waitForFunction(() => document.getElementById("notice")?.textContent?.startsWith("Review sent"), undefined, {
      timeout: 120_000,
    });
    const next = await settled(p, "notes");
    expect(next.task.status).toBe("done");
    const asked = posts().map((r) => r.body);
    expect(asked.some((b) => b.includes("notes.txt:1: rename alpha to first") && b.includes("notes.txt:3: gamma needs a test"))).toBe(true);
    // The line each comment is on is quoted for the agent.
    expect(asked.some((b) => b.includes("> alpha") && b.includes("> gamma"))).toBe(true);
    expect(page.problems).toEqual([]);
    await ctx.close();

    // lazy send --review: a comment on a line the diff does not show is refused, nothing sent.
    anthropic.reset();
    const bad = join(p.home, "bad-review.txt");
    writeFileSync(bad, "notes.txt:2: fine\nnotes.txt:40: no such line\nREADME.md:1: not changed\n");
    const refused = await p.run(["send", "notes", "--review", bad]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("The review was not sent");
    expect(refused.stderr).toContain("notes.txt:40: not a line of the diff (it shows lines 1-3 of notes.txt)");
    expect(refused.stderr).toContain("README.md:1: README.md is not in the diff of lazy/notes");
    // A file that is not a review names its bad line.
    const garbled = join(p.home, "garbled.txt");
    writeFileSync(garbled, "notes.txt:2: fine\nthis is not a comment\n");
    const notReview = await p.run(["send", "notes", "--review", garbled]);
    expect(notReview.code).not.toBe(0);
    expect(notReview.stderr).toContain(`${garbled}:2: not a comment`);
    await never(() => posts().length, 500, "a model request after the refused review");
    expect(posts()).toEqual([]);
    expect((await p.json(["task", "show", "notes"])).task.status).toBe("done");

    // A good file (and a note after it) is the next turn.
    const good = join(p.home, "review.txt");
    writeFileSync(good, "# review of notes\nnotes.txt:2: beta is fine,\n  but say why it is here\n");
    const sent = await p.run(["send", "notes", "--review", good, "Thanks."]);
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toContain("Sent 1 review comment(s) to notes");
    await settledAs(p, "notes");
    expect(
      posts().some((r) => r.body.includes("notes.txt:2: beta is fine,\\n  but say why it is here") && r.body.includes("Thanks.")),
    ).toBe(true);
  }, 900_000);

  test("Home shows an agent's question in full with a reply box; the reply is its next message", async () => {
    anthropic.reset();
    const question = "Which colour should the button be?\nThe brand guide says blue,\nbut the mock-up is red.";
    anthropic.reply = { text: "I asked.", toolUse: { name: "mcp__lazy__ask_human", input: { question } } };
    await launched(p, "asker", "Paint the button");
    expect((await settled(p, "asker")).task.status).toBe("waiting");

    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/`);
    await pg.waitForSelector("#inbox-questions blockquote", { timeout: 10_000 });
    expect(await pg.locator("#inbox-questions blockquote").first().textContent()).toBe(question);
    anthropic.answer({ text: "Painted it red." });
    await pg.getByLabel("Reply to asker").fill("red, the mock-up wins");
    await pg.locator(`#inbox-questions li:has-text("Paint the button")`).getByRole("button", { name: "Reply" }).click();
    // Answered: the question leaves Home, and the agent's next turn has the reply.
    await pg.waitForSelector('#inbox-questions li:has-text("Paint the button")', { state: "detached", timeout: 120_000 });
    await settledAs(p, "asker");
    expect(posts().some((r) => r.body.includes("red, the mock-up wins"))).toBe(true);
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 900_000);
});
