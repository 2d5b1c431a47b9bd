/**
 * Best-of-N's compare (issue 37), through the real binary and real headless Chromium: Keep one
 * points at the best-ranked candidate that changed something (and at none, saying why, when none
 * did); the diff between two candidates from lazy compare --diff, the API and the page; and the
 * group's page at 1280×800 and 390×844 with every cell on its line, its buttons whole and no
 * sideways scroll (screenshots in test-artifacts/dashboard/).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { upstream } from "../helpers/fixtures";
import { handMadeGroup } from "../helpers/groups";
import { cleanupAll, Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { closeBrowser, shot, signedIn } from "./browser";

const KEY = `sk-ant-api03-COMPARE-${"c".repeat(70)}AA`;
const LONG =
  "Rewrote which.txt so it names the winner, checked the README still reads well, and left a note for the reviewer about why the other approach (a lookup table keyed by branch) was dropped.";
let mock: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({ toml: `${upstream(mock.url)}\n[profiles.a]\nharness = "claude"\nmodel = "claude-sonnet-4-5"\n` });
  sh(p.root, "printf 'start\\n' > which.txt && git add which.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm init");
  await p.setCredential("anthropic", KEY);
  // g-1 changed nothing; g-2 and g-3 each changed which.txt (g-3 a second file too).
  await handMadeGroup(p, "g", [{}, { "which.txt": "two" }, { "which.txt": "three", "notes.md": "why three" }], {
    summaries: [null, LONG, "Three."],
  });
  await handMadeGroup(p, "none", [{}, {}]);
}, 120_000);

afterAll(async () => {
  await closeBrowser();
  await cleanupAll(mock);
});

describe("Keep one", () => {
  test("points at the best-ranked candidate that changed something, not at the first row", async () => {
    const c = await p.json(["compare", "g", "--no-check"]);
    expect(c.candidates.map((x: any) => [x.code, x.status, x.diffstat.files])).toEqual([
      ["g-1", "done", 0],
      ["g-2", "done", 1],
      ["g-3", "done", 2],
    ]);
    expect(c.keep).toBe("g-2");
    const text = (await p.ok(["compare", "g", "--no-check"])).stdout;
    expect(text).toContain("Keep one: lazy accept g-2 (ranked first;");
    expect(text).not.toContain("lazy accept g-1");
  });

  test("when no candidate changed a file there is none, and it says why", async () => {
    const c = await p.json(["compare", "none", "--no-check"]);
    expect(c.keep).toBeNull();
    expect(c.keepNote).toBe("no finished candidate changed a file: nothing to keep");
    const text = (await p.ok(["compare", "none", "--no-check"])).stdout;
    expect(text).toContain("Keep one: none (no finished candidate changed a file: nothing to keep).");
    expect(text).not.toContain("lazy accept");
  });
});

describe("the diff between two candidates", () => {
  test("lazy compare G --diff A B: A's tip against B's, file by file", async () => {
    const r = await p.ok(["compare", "g", "--diff", "g-2", "g-3"]);
    expect(r.stdout).toContain("g-2 → g-3: lazy/g-2..lazy/g-3");
    expect(r.stdout).toContain("diff notes.md");
    expect(r.stdout).toContain("diff which.txt");
    expect(r.stdout).toContain("-two");
    expect(r.stdout).toContain("+three");
    const d = await p.json(["compare", "g", "--diff", "g-2", "g-3"]);
    expect(d.total).toEqual({ files: 2, added: 2, removed: 1 });
    const stat = await p.ok(["compare", "g", "--diff", "g-2", "g-3", "--stat"]);
    expect(stat.stdout).toContain("2 file(s) changed, +2 -1");
    const same = await p.ok(["compare", "none", "--diff", "none-1", "none-2"]);
    expect(same.stdout).toContain("lazy/none-1 and lazy/none-2 are the same commit.");
  });

  test("one candidate named, or a name that is not one of the group's, is refused naming the candidates", async () => {
    const one = await p.run(["compare", "g", "--diff", "g-2"]);
    expect(one.code).toBe(2);
    expect(one.stderr).toContain("Name two candidates: lazy compare g --diff A B");
    const other = await p.run(["compare", "g", "--diff", "g-2", "none-1"]);
    expect(other.code).toBe(2);
    expect(other.stderr).toContain('"none-1" is not a candidate of group g: to names one of g-1, g-2, g-3.');
  });
});

describe("the group's page", () => {
  for (const [label, viewport] of [
    ["desktop", { width: 1280, height: 800 }],
    ["phone", { width: 390, height: 844 }],
  ] as const)
    test(`at ${viewport.width}×${viewport.height}: every value on its line, buttons whole, no sideways scroll; Keep one and the diff between two`, async () => {
      const { ctx, origin, page } = await signedIn(p, viewport);
      const pg = page.page;
      await pg.goto(`${origin}/groups/g`);
      await pg.waitForSelector("#compare tbody tr", { timeout: 10_000 });
      const layout = await pg.evaluate(() => {
        const lineOf = (el: Element) => Number.parseFloat(getComputedStyle(el).lineHeight) || 20;
        // Cells whose text wraps (one letter per line in a squeezed table): their text on more than two lines.
        const lines = (el: Element) => {
          const tops = new Set<number>();
          const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          for (let n = walk.nextNode(); n; n = walk.nextNode()) {
            const r = document.createRange();
            r.selectNodeContents(n);
            for (const x of r.getClientRects()) if (x.width > 0) tops.add(Math.round(x.top / 4));
          }
          return tops.size;
        };
        const squeezed = [...document.querySelectorAll("#compare th, #compare td:not(.summary)")]
          .filter((td) => lines(td) > 2)
          .map((td) => `${td.getAttribute("data-label") ?? "heading"}: ${td.textContent}`);
        const buttons = [...document.querySelectorAll<HTMLButtonElement>("main button")]
          .filter((b) => b.offsetParent !== null)
          .filter((b) => b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().height > 2.2 * lineOf(b) + 12)
          .map((b) => b.textContent);
        return { squeezed, buttons, scroll: document.documentElement.scrollWidth, width: window.innerWidth };
      });
      expect(layout.squeezed).toEqual([]);
      expect(layout.buttons).toEqual([]);
      expect(layout.scroll, "the page scrolls sideways").toBeLessThanOrEqual(layout.width);
      // The summary is read whole, not cut.
      expect(await pg.locator('#compare tr[data-task] td[data-label="summary"]').nth(1).textContent()).toBe(LONG);

      // Keep one: the ranked-first candidate, marked in its row.
      const keep = pg.locator("#keep-one");
      expect(await keep.textContent()).toBe("Keep g-2");
      expect(await keep.isEnabled()).toBe(true);
      expect(await pg.locator("#compare tr.best td[data-label=candidate]").textContent()).toBe("g-2");
      // It accepts that one, asked first; a no leaves every candidate be.
      let asked = "";
      pg.once("dialog", (d) => {
        asked = d.message();
        void d.dismiss();
      });
      await keep.click();
      expect(asked).toBe("Accept g-2: merge lazy/g-2 and close g-1, g-3 (their branches stay)?");
      expect((await p.json(["task", "show", "g-2"])).task.status).toBe("done");

      // The diff between two candidates.
      await pg.selectOption("#pair-from", "g-2");
      await pg.selectOption("#pair-to", "g-3");
      await pg.getByRole("button", { name: "Show diff" }).click();
      await pg.waitForFunction(() => document.getElementById("pair-diff")?.textContent?.includes("g-2 → g-3"), undefined, {
        timeout: 5000,
      });
      const diff = await pg.locator("#pair-diff").textContent();
      expect(diff).toContain("2 file(s) +2 −1");
      expect(diff).toContain("which.txt");
      expect(await pg.locator("#pair-diff .hunk .d").first().textContent()).toBe("-two");
      expect(await pg.locator("#pair-diff .hunk .a").first().textContent()).toBe("+why three");
      const after = await pg.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      expect(after, "the diff makes the page scroll sideways").toBe(true);
      await shot(pg, `compare-${label}`);

      // A group where no candidate changed a file: Keep one is there, disabled, with the reason.
      await pg.goto(`${origin}/groups/none`);
      await pg.waitForSelector("#compare tbody tr", { timeout: 10_000 });
      expect(await pg.locator("#keep-one").isDisabled()).toBe(true);
      expect(await pg.locator("#keep-why").textContent()).toBe("no finished candidate changed a file: nothing to keep");
      await shot(pg, `compare-none-${label}`);
      expect(page.problems).toEqual([]);
      await ctx.close();
    }, 90_000);
});
