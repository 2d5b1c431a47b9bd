/**
 * Best-of-N's check judged against the untouched base (issue 37): lazy runs [review] check once
 * on the commit the candidates forked from, in a fresh container as it runs on a candidate, and
 * keeps that verdict with the group. A check that passes there too tells no candidate apart: it
 * is no candidate's pass (lazy run --profiles exits 3), and compare and the page say so. A check
 * that fails on the base counts as before.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { closeBrowser, shot, signedIn } from "../dashboard/browser";
import { bash, containerProject, edit, teardown } from "../helpers/fixtures";
import { type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BESTOFBASE-${"w".repeat(66)}AA`;
// Passes on the base (README.md is committed there) and on every candidate alike.
const LOOSE = "echo in-container=$LAZY_IN_CONTAINER; test -f README.md";
const STRICT = "grep -qx good which.txt";
const WORK = `case "$(git branch --show-current)" in *-a) v=good;; *) v=bad;; esac; echo $v > which.txt && git add which.txt && git commit -qm "which: $v"`;
let mock: Mock.MockProvider;
let p: Project;
let toml: string;
let run: { code: number; stdout: string; stderr: string };
let base: string;

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY, {
    extra: `\n[profiles.a]\nharness = "claude"\n\n[profiles.b]\nharness = "claude"\n\n[review]\ncheck = "${LOOSE}"\n`,
  });
  toml = readFileSync(join(p.root, "lazy.toml"), "utf8");
  base = sh(p.root, "git rev-parse HEAD").out.trim();
  mock.reply = bash("Done: which.txt.", WORK, "write which.txt");
  run = await p.run(["run", "--profiles", "a,b", "Write which.txt", "--code", "base1"]);
}, 900_000);

afterAll(() => teardown(p, mock, { close: closeBrowser }));

describe("best-of-N: the check on the untouched base", () => {
  test("a check that passes on the base too is no candidate's pass: lazy run --profiles exits 3 and says why", async () => {
    expect(run.code, run.stderr + run.stdout).toBe(3);
    expect(run.stdout).toContain("the check passes on the base too: it does not tell candidates apart");
    expect(run.stdout).toMatch(/base1-a\s+a\s+done\s+1 file\(s\) \+1 -0\s+pass on base too/);
    expect(run.stdout).toContain(`Base: pass on ${base.slice(0, 12)}`);
  }, 60_000);

  test("compare: the base's verdict, from a fresh container, kept with the group across a daemon restart", async () => {
    const c = await p.json(["compare", "base1"]);
    expect(c.base).toMatchObject({ ok: true, code: 0, command: LOOSE, commit: base });
    // Run as a candidate's check runs: in a container, never on the host.
    expect(c.base.output).toContain("in-container=1");
    expect(c.baseNote).toBe("the check passes on the base too: it does not tell candidates apart");
    expect(c.candidates.map((x: any) => x.check.ok)).toEqual([true, true]);
    // Both changed a file; no check tells them apart: the first of equals is ranked first.
    expect(c.keep).not.toBeNull();
    await p.ok(["daemon", "restart"]);
    const kept = await p.json(["compare", "base1", "--no-check"]);
    expect(kept.base).toMatchObject({ ok: true, commit: base, at: c.base.at });
  }, 600_000);

  test("the group's page says the check does not tell candidates apart", async () => {
    const { ctx, origin, page } = await signedIn(p);
    const pg = page.page;
    await pg.goto(`${origin}/groups/base1`);
    await pg.waitForSelector("#compare tbody tr", { timeout: 10_000 });
    expect(await pg.locator("#base").textContent()).toBe("pass: the check passes on the base too: it does not tell candidates apart");
    expect(await pg.locator("#compare tbody tr:nth-child(1) td[data-label=check]").textContent()).toBe("pass on base too");
    await shot(pg, "bestof-base-passes");
    expect(page.problems).toEqual([]);
    await ctx.close();
  }, 120_000);

  test("a check that fails on the base counts: the candidate that passes it is ranked first", async () => {
    edit(p, toml.replace(`check = "${LOOSE}"`, `check = "${STRICT}"`));
    p.trust();
    // The daemon reads the trusted file on its change (hot reload): a moment.
    const c = await until(
      async () => {
        const r = await p.json(["compare", "base1"]);
        return r.check === STRICT ? r : undefined;
      },
      120_000,
      "the compare under the new check",
    );
    // grep's 2: no which.txt on the base at all.
    expect(c.base).toMatchObject({ ok: false, code: 2, command: STRICT, commit: base });
    expect(c.baseNote).toBeNull();
    expect(c.candidates.map((x: any) => [x.code, x.check.ok])).toEqual([
      ["base1-a", true],
      ["base1-b", false],
    ]);
    expect(c.keep).toBe("base1-a");
    const text = (await p.ok(["compare", "base1", "--no-check"])).stdout;
    expect(text).toMatch(/base1-a\s+a\s+done\s+1 file\(s\) \+1 -0\s+pass\s/);
    expect(text).toContain(`Base: FAIL (exit 2) on ${base.slice(0, 12)}`);
    expect(text).toContain("Keep one: lazy accept base1-a");
    expect(text).not.toContain("does not tell candidates apart");
  }, 600_000);
});
