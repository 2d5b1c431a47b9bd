/**
 * Best-of-N for real: `lazy run --profiles a,b` runs one prompt on two mock-backed profiles,
 * each candidate real Claude Code in its own container and worktree; lazy compare shows both
 * with the [review] check's verdict (run in a container, never on the host), tokens and cost
 * from lazy's own counters; accepting one merges it and closes the other (its branch kept).
 * Then merges that explain themselves: a conflict names the file, a dirty checkout says to
 * commit or stash.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { closeBrowser, shot, signedIn } from "../dashboard/browser";
import { bash, containerProject, settled, teardown } from "../helpers/fixtures";
import { never, type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BESTOF-${"q".repeat(70)}AA`;
const HOST_MARKER = `/tmp/lazy-bestof-check-${process.pid}`;
let mock: Mock.MockProvider;
let p: Project;

// Every candidate gets the same answer from the mock; what it does depends on its branch:
// the `-a` one writes "good", any other "bad". Each appends to README.md too.
const WORK = `case "$(git branch --show-current)" in *-a) v=good;; *) v=bad;; esac; echo $v > which.txt && echo "by $v" >> README.md && git add which.txt README.md && git commit -qm "which: $v"`;

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY, {
    extra: [
      "",
      "[profiles.a]",
      'harness = "claude"',
      'model = "claude-sonnet-4-5"',
      "",
      "[profiles.b]",
      'harness = "claude"',
      'model = "claude-haiku-4-5"',
      "",
      "[review]",
      // Where it runs shows in its output; the marker would appear on the host if it ran there.
      `check = "echo in-container=$LAZY_IN_CONTAINER; touch ${HOST_MARKER}; grep -qx good which.txt"`,
    ].join("\n"),
  });
  mock.reply = bash("Done: which.txt.", WORK, "write which.txt");
}, 180_000);

afterAll(() => teardown(p, mock, { close: closeBrowser }));

describe("best-of-N", () => {
  test("lazy run --profiles a,b: two candidates; compare shows both with the check, tokens and cost from the audit", async () => {
    const r = await p.run(["run", "--profiles", "a,b", "Write which.txt", "--code", "g1"]);
    // Exit 0: a candidate finished and passed the check (b finished too, and failed it).
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("Group g1: g1-a [a], g1-b [b]");
    expect(r.stdout).toMatch(/g1-a\s+a\s+done\s+2 file\(s\) \+2 -0\s+pass/);
    expect(r.stdout).toMatch(/g1-b\s+b\s+done\s+2 file\(s\) \+2 -0\s+FAIL \(exit 1\)/);

    const c = await p.json(["compare", "g1"]);
    expect(c.candidates.map((x: any) => x.code)).toEqual(["g1-a", "g1-b"]);
    for (const x of c.candidates) {
      // Tokens and cost are lazy's own counters for that task: the board's row reads the same.
      const row = await p.api("GET", `/api/board/tasks/${x.code}`);
      expect(x.tokens).toBeGreaterThan(0);
      expect(x.tokens).toBe(row.task.tokens);
      expect(x.usd).toBeGreaterThan(0);
      expect(x.usd).toBeCloseTo(row.task.usd, 10);
      expect(x.wallMs).toBeGreaterThan(0);
      expect(x.diffstat).toEqual({ files: 2, added: 2, removed: 0 });
      // The check ran in a container, not on the host.
      expect(x.check.output).toContain("in-container=1");
    }
    expect(existsSync(HOST_MARKER)).toBe(false);
    // Priced by each profile's model: a (sonnet) costs more a token than b (haiku).
    const [a, b] = c.candidates;
    expect(a.usd / a.tokens).toBeGreaterThan(b.usd / b.tokens);
    expect([a.check.ok, b.check.ok]).toEqual([true, false]);
    // Each candidate worked on its own branch.
    expect(sh(p.root, "git show lazy/g1-a:which.txt").out.trim()).toBe("good");
    expect(sh(p.root, "git show lazy/g1-b:which.txt").out.trim()).toBe("bad");
  }, 900_000);

  test("the group's page shows both side by side, as lazy compare does; Reject asks first, and a no leaves the task be", async () => {
    const c = await p.json(["compare", "g1", "--no-check"]);
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/groups/g1`);
    await pg.waitForSelector("#compare tbody tr", { timeout: 10_000 });
    const rows = await pg.$$eval("#compare tbody tr", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
    );
    expect(rows.map((r) => r.slice(0, 8))).toEqual(
      c.candidates.map((x: any) => [
        x.code,
        x.profile,
        "done",
        "2 file(s) +2 −0",
        x.code === "g1-a" ? "pass" : "fail (exit 1)",
        x.tokens.toLocaleString("en-US"),
        `$${x.usd.toFixed(x.usd < 1 ? 4 : 2)}`,
        expect.stringMatching(/^\d+(s|m \d+s)$/),
      ]),
    );
    await shot(pg, "bestof-group");
    // Reject on g1-b: the browser's confirm names the branch; dismissed, nothing happens.
    let asked = "";
    pg.once("dialog", (d) => {
      asked = d.message();
      void d.dismiss();
    });
    await pg.locator('#compare tr:nth-child(2) button[data-verb="reject"]').click();
    expect(asked).toContain("Reject g1-b and delete its branch lazy/g1-b?");
    await never(
      async () => (await p.json(["task", "show", "g1-b"])).task.status !== "done",
      300,
      "g1-b rejected though the dialog was dismissed",
    );
    expect((await p.json(["task", "show", "g1-b"])).task.status).toBe("done");
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 120_000);

  test("accepting one merges it and closes the other, whose branch stays", async () => {
    const acc = await p.ok(["accept", "g1-a"]);
    expect(acc.stdout).toContain("Closed the other candidates of group g1: g1-b");
    expect(readFileSync(join(p.root, "which.txt"), "utf8").trim()).toBe("good");
    const after = await p.json(["compare", "g1", "--no-check"]);
    expect(after.candidates.map((x: any) => x.status)).toEqual(["accepted", "closed"]);
    // The other's branch stays.
    expect(sh(p.root, "git rev-parse --verify -q lazy/g1-b").code).toBe(0);
  }, 900_000);

  test("a merge conflict names the conflicting file; a dirty checkout says to commit or stash; nothing is merged", async () => {
    const r = await p.run(["run", "Write which.txt", "--code", "clash"]);
    expect(r.code, r.stderr).toBe(0);
    const head = sh(p.root, "git rev-parse HEAD").out.trim();

    // Someone changed README.md in the checkout and did not commit it: the branch changes it too.
    writeFileSync(join(p.root, "README.md"), `${readFileSync(join(p.root, "README.md"), "utf8")}work in progress\n`);
    const dirty = await p.run(["accept", "clash"]);
    expect(dirty.code).not.toBe(0);
    expect(dirty.stderr).toContain("changes not committed in files the merge of lazy/clash would write: README.md");
    expect(dirty.stderr).toContain("Commit or stash them");
    expect(sh(p.root, "git rev-parse HEAD").out.trim()).toBe(head);
    expect((await p.json(["task", "show", "clash"])).task.status).toBe("done");

    // Committed, it conflicts with the branch's README.md (both added a line at its end).
    sh(p.root, "git commit -qam 'wip'");
    const conflict = await p.run(["accept", "clash"]);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain("lazy/clash conflicts with the project's branch in README.md");
    expect(conflict.stderr).toContain("git merge lazy/clash");
    expect(conflict.stderr).toContain("lazy send clash");
    expect(sh(p.root, "git status --porcelain --untracked-files=no").out.trim()).toBe("");
    expect((await p.json(["task", "show", "clash"])).task.status).toBe("done");

    // Reject asks before deleting the branch; --yes deletes it.
    const asked = await p.run(["reject", "clash"]);
    expect(asked.stderr).toContain("pass --yes");
    expect(sh(p.root, "git rev-parse --verify -q lazy/clash").code).toBe(0);
    await p.ok(["reject", "clash", "--yes"]);
    expect(sh(p.root, "git rev-parse --verify -q lazy/clash").code).not.toBe(0);
    await settled(p, "clash");
  }, 900_000);
});
