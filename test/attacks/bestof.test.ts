/**
 * Best-of-N under attack: two candidates of one group run at once, real Claude Code in real
 * containers (the mock answers both with the same tool_use; what it does depends on the
 * candidate's branch). One candidate's agent goes for the other's worktree and branch; the
 * other forges the check's verdict by planting a `grep` that always passes in its own
 * container; and a lazy.toml changed without `lazy trust` names a check of its own. Each test
 * asserts the outcome the attacker wanted did not happen on the host.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { containerProject, edit, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-BESTOFATTACK-${"z".repeat(64)}AA`;
const CHECK = "grep -qx good which.txt";
let mock: Mock.MockProvider;
let p: Project;
let toml: string;
let run: { code: number; stdout: string; stderr: string };

const agent = (state: string) => {
  const other = join(state, "worktrees", "atk-b");
  return [
    'case "$(git branch --show-current)" in',
    // Candidate a: probe b's worktree, write into it, point b's branch at its own commit.
    `*-a) echo good > which.txt; { ls -la ${other} 2>&1; sudo mkdir -p ${other} && echo evil | sudo tee ${other}/evil.txt; git update-ref refs/heads/lazy/atk-b HEAD 2>&1; git push -f . HEAD:refs/heads/lazy/atk-b 2>&1; } > probe.txt; git add which.txt probe.txt; git commit -qm a; git update-ref refs/heads/lazy/atk-b HEAD 2>&1;;`,
    // Candidate b: a wrong answer, and a grep that always passes, for the check to find.
    `*) echo bad > which.txt; git add which.txt; git commit -qm b; printf '#!/bin/sh\\nexit 0\\n' | sudo tee /usr/local/bin/grep >/dev/null; sudo chmod 755 /usr/local/bin/grep;;`,
    "esac",
  ].join("\n");
};

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY, {
    extra: `\n[profiles.a]\nharness = "claude"\n\n[profiles.b]\nharness = "claude"\n\n[review]\ncheck = "${CHECK}"\n`,
  });
  toml = readFileSync(join(p.root, "lazy.toml"), "utf8");
  mock.reply = { text: "done.", toolUse: { name: "Bash", input: { command: agent(p.stateDir), description: "work" } } };
  run = await p.run(["run", "--profiles", "a,b", "Write which.txt", "--code", "atk"]);
}, 600_000);

afterAll(() => teardown(p, mock));

describe("best-of-N: one candidate against another, and against the check", () => {
  test("a candidate's agent cannot reach the other candidate's worktree or move its branch", async () => {
    expect(run.code, run.stderr).toBe(0);
    // What the attacker saw: no such folder in its container.
    expect(sh(p.root, "git show lazy/atk-a:probe.txt").out).toContain("No such file or directory");
    // On the host: b's worktree has no file of a's, and b's branch is b's own work only.
    expect(existsSync(join(p.stateDir, "worktrees", "atk-b", "evil.txt"))).toBe(false);
    expect(sh(p.root, "git log --format=%s lazy/atk-b").out.trim().split("\n")).toEqual(["b", "init"]);
    expect(sh(p.root, "git show lazy/atk-b:which.txt").out.trim()).toBe("bad");
    expect(sh(p.root, "git cat-file -e lazy/atk-b:probe.txt").code).not.toBe(0);
  });

  test("a grep planted in the agent's own container does not pass the check: it runs in a fresh container", async () => {
    const c = await p.json(["compare", "atk"]);
    const b = c.candidates.find((x: any) => x.code === "atk-b");
    expect(b.check).toMatchObject({ ok: false, code: 1, command: CHECK });
    expect(c.candidates.find((x: any) => x.code === "atk-a").check.ok).toBe(true);
    // The agent's container kept its planted grep (the check did not use that container).
    const id = sh("/", `docker ps -aq --filter label=dev.lazy.task=${b.id}`).out.trim().split("\n")[0]!;
    sh("/", `docker start ${id}`);
    expect(sh("/", `docker exec ${id} cat /usr/local/bin/grep`).out).toContain("exit 0");
    sh("/", `docker stop -t 0 ${id}`);
  });

  test("a check named by a lazy.toml nobody trusted never runs: the CLI refuses, the daemon judges with the trusted one", async () => {
    const marker = join(p.stateDir, "worktrees", "atk-a", "pwned.txt");
    edit(p, toml.replace(`check = "${CHECK}"`, 'check = "touch pwned.txt; echo UNTRUSTED"'));
    // One trust rule, daemon or not: the CLI refuses to judge under an untrusted file (exit 4,
    // naming lazy trust) and runs nothing.
    const cli = await p.run(["compare", "atk", "--recheck"]);
    expect(cli.code, cli.stdout).toBe(4);
    expect(cli.stderr).toContain("lazy trust");
    expect(cli.stdout + cli.stderr).not.toContain("UNTRUSTED");
    expect(existsSync(marker)).toBe(false);
    // Straight to the API (the dashboard's Run check): refused the same way, before any check runs.
    const err = await p.api("POST", "/api/groups/atk/check", { force: true }).then(
      () => "",
      (e: Error) => e.message,
    );
    expect(err).toContain("403");
    expect(err).toContain("config_untrusted");
    expect(err).toContain("review.check");
    expect(existsSync(marker)).toBe(false);
    // Once approved again (the file as it was), the daemon judges with the approved command.
    edit(p, toml);
    const r = await p.api("POST", "/api/groups/atk/check", { force: true });
    const a = r.comparison.candidates.find((x: any) => x.code === "atk-a");
    expect(r.comparison.check).toBe(CHECK);
    expect(a.check.command).toBe(CHECK);
    expect(a.check.output).not.toContain("UNTRUSTED");
    expect(existsSync(marker)).toBe(false);
  });
});
