/**
 * The best-of-N check under attack: it must judge what `lazy accept` would merge, the tip's
 * committed files. Candidate a commits a failing answer and leaves a passing one uncommitted
 * in its worktree; candidate b commits a passing answer. Real Claude Code in real containers, a mock
 * provider; the verdicts are what `lazy compare` shows.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { bash, containerProject, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-CHECKTIPATTACK-${"t".repeat(62)}AA`;
const CHECK = "grep -qx pass answer.txt";
let mock: Mock.MockProvider;
let p: Project;
let run: { code: number; stdout: string; stderr: string };

const agent = [
  'case "$(git branch --show-current)" in',
  // a: the failing answer committed, the passing one left uncommitted in the worktree.
  "*-a) echo fail > answer.txt; git add answer.txt; git commit -qm a; echo pass > answer.txt;;",
  // b: the passing answer, committed.
  "*) echo pass > answer.txt; git add answer.txt; git commit -qm b;;",
  "esac",
].join("\n");

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY, {
    extra: `\n[profiles.a]\nharness = "claude"\n\n[profiles.b]\nharness = "claude"\n\n[review]\ncheck = "${CHECK}"\n`,
  });
  mock.reply = bash("done.", agent, "answer");
  run = await p.run(["run", "--profiles", "a,b", "Write answer.txt", "--code", "tip"]);
}, 600_000);

afterAll(() => teardown(p, mock));

describe("the check judges the tip, not the worktree", () => {
  test("a failing commit with a passing file left uncommitted is judged failing, for that tip", async () => {
    expect(run.code, run.stderr).toBe(0);
    // What the attacker left: the tip fails, the worktree would pass.
    expect(sh(p.root, "git show lazy/tip-a:answer.txt").out.trim()).toBe("fail");
    expect(readFileSync(join(p.stateDir, "worktrees", "tip-a", "answer.txt"), "utf8").trim()).toBe("pass");
    const c = await p.json(["compare", "tip"]);
    const a = c.candidates.find((x: any) => x.code === "tip-a");
    const b = c.candidates.find((x: any) => x.code === "tip-b");
    // compare shows a verdict only when it is about the branch's current tip.
    expect(a.check).toMatchObject({ ok: false, code: 1, command: CHECK });
    // The same check passes a tip that does pass: it is not a check that cannot pass.
    expect(b.check).toMatchObject({ ok: true, code: 0, command: CHECK });
    // The check's container is gone, files and all.
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root} --filter name=-check-`).out.trim()).toBe("");
  });
});
