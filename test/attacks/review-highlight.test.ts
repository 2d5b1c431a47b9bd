/**
 * Attacks on the task page's syntax highlighting (issue 37): the diff is the agent's text, and
 * now it goes through a highlighter. A prompt-injected agent (real Claude Code in a real
 * container, told by the mock provider to run one Bash call) commits a TypeScript file and an
 * HTML file whose lines are `<script>`, `<img onerror>`, `</span>` and `</div>` breakouts out of
 * the highlighter's own markup, quotes that would close an attribute, a `<style>` that would hide
 * the page, and terminal escapes (OSC retitle, clear screen, a C1 CSI). In Chromium, unified and
 * split, highlighted and not: nothing runs, no element of the agent's appears (no script, img or
 * style; every class on a diff element is one lazy made), each line reads literally, and each
 * control byte shows as `\x1b`, never as itself. Before issue 37 no line was highlighted and the
 * control bytes went into the page raw (the highlighted and `\x1b` assertions fail there).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Page } from "playwright-core";
import { closeBrowser, shot, signedIn } from "../dashboard/browser";
import { anthropicProject, bash, launched, settledAs, teardown } from "../helpers/fixtures";
import type { Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-HIGHLIGHTATTACK-${"h".repeat(65)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

const TS = [
  'const a = "</span><script>window.__pwned=1</script>";',
  '// <img src=x onerror="window.__pwned=2"> </span></div></details>',
  "const b = `</span></span></div><img src=x onerror=window.__pwned=3>`;",
  'const c = "\x1b]0;PWNED\x07\x1b[2J\u009b31m red"; // "><img src=x onerror=window.__pwned=4>',
  "<script>window.__pwned=5</script>",
];
const HTML = [
  "<script>window.__pwned=6</script>",
  '<img src=x onerror="window.__pwned=7">',
  "<style>main{display:none}</style>",
  '<a href="javascript:window.__pwned=8" class="x"><span class=\'</span><b>\'>x</span></a>',
];
/** A line as the page must show it: control bytes as `\xNN`. */
const shown = (l: string) =>
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control bytes are the point
  l.replace(/[\x00-\x08\x0a-\x0c\x0e-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
const b64 = (lines: string[]) => Buffer.from(`${lines.join("\n")}\n`).toString("base64");

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY));
  anthropic.answer(
    bash(
      "Done.",
      `echo ${b64(TS)} | base64 -d > evil.ts && echo ${b64(HTML)} | base64 -d > evil.html && git add -A && git commit -qm evil`,
      "x",
    ),
  );
  await launched(p, "evil", "Look around");
  await settledAs(p, "evil");
}, 600_000);
afterAll(() => teardown(p, anthropic, { close: closeBrowser }));

/** What the diff shows and holds: its lines' text, any element or class the agent could have made, what ran. */
const seen = (pg: Page) =>
  pg.evaluate(() => ({
    pwned: (window as unknown as { __pwned?: number }).__pwned ?? null,
    elements: document.querySelectorAll("main script, main img, main style, main iframe, main object, #diff a[href^='javascript']").length,
    lines: [...document.querySelectorAll<HTMLElement>(".hunk [data-k]")].map((l) => l.textContent ?? ""),
    highlighted: document.querySelectorAll(".hunk .tk-string").length,
    classes: [...new Set([...document.querySelectorAll("#diff *")].flatMap((e) => [...e.classList]))],
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a control byte in the page is what is looked for
    raw: /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/.test(document.getElementById("diff")!.textContent ?? ""),
    mainShown: getComputedStyle(document.querySelector("main")!).display !== "none",
  }));

describe("the highlighted diff is hostile input", () => {
  test("script, img onerror, </span> breakouts and terminal escapes in a diff stay text, highlighted or not, unified or split", async () => {
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    let dialogs = 0;
    pg.on("dialog", (d) => {
      dialogs++;
      void d.dismiss();
    });
    await pg.goto(`${origin}/tasks/evil`);
    await pg.waitForSelector(".files >> text=evil.ts", { timeout: 10_000 });
    for (const layout of ["Unified", "Split", "Unified"] as const) {
      await pg.getByRole("button", { name: layout, exact: true }).click();
      await pg.waitForFunction(() => document.querySelectorAll(".hunk .tk-string").length > 0, undefined, { timeout: 10_000 });
      const s = await seen(pg);
      expect(s.pwned).toBeNull();
      expect(s.elements).toBe(0);
      expect(s.highlighted).toBeGreaterThan(0);
      expect(s.raw).toBe(false);
      expect(s.mainShown).toBe(true);
      // Every line, literally (its escapes as \x1b), whatever the highlighter made of it.
      for (const l of [...TS, ...HTML]) expect(s.lines).toContain(`+${shown(l)}`);
      expect(s.lines).toContain('+const c = "\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m red"; // "><img src=x onerror=window.__pwned=4>');
      // Only lazy's own classes: none from the agent's text.
      for (const c of s.classes) expect(c).toMatch(/^[a-z][a-z0-9-]*$/);
      if (layout === "Split") await shot(pg, "attack-highlight-split");
    }
    // Plain, too.
    await pg.getByRole("button", { name: "Highlight" }).click();
    await pg.waitForFunction(() => document.querySelectorAll(".hunk .tk").length === 0, undefined, { timeout: 10_000 });
    const plain = await seen(pg);
    expect(plain.elements).toBe(0);
    expect(plain.raw).toBe(false);
    for (const l of [...TS, ...HTML]) expect(plain.lines).toContain(`+${shown(l)}`);
    await pg.getByRole("button", { name: "Highlight" }).click();
    // A comment on a hostile line: still nothing runs.
    await pg.locator('[data-file]:has(summary:has-text("evil.ts")) .hunk [data-k="new:1"]').click();
    await pg.getByLabel("Comment on evil.ts:1").fill("</span><img src=x onerror=window.__pwned=9>");
    await pg.getByRole("button", { name: "Add comment" }).click();
    expect(await pg.locator(".comment").textContent()).toContain("</span><img src=x onerror=window.__pwned=9>");
    await shot(pg, "attack-highlight");
    const after = await seen(pg);
    expect(after.pwned).toBeNull();
    expect(after.elements).toBe(0);
    expect(dialogs).toBe(0);
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 120_000);
});
