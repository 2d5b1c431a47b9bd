/**
 * CI as root: a job runs lazy as root in a checkout under (or being) a `mktemp -d` folder, which
 * is 0700. The agent is still uid 1000 in its container; the task runs to `done`, its commit
 * lands on lazy/<task>, and no mode or owner of the person's files changed. Real Docker, real
 * Claude Code, mock provider on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { lstatSync, mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { containerProject, scratched, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-CIROOT-" + "r".repeat(71) + "AA";
let anthropic: Mock.MockProvider;
const made: string[] = [];
const projects: Project[] = [];

beforeAll(async () => {
  anthropic = await Mock.anthropic();
});

afterAll(() => teardown(projects, anthropic, scratched(made)));

/** Every path under `dir` (and `dir`) with its mode and owner, git's own index aside (git status rewrites it). */
function modes(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (p: string) => {
    const st = lstatSync(p);
    out.set(p, `${st.mode.toString(8)} ${st.uid}:${st.gid}`);
    if (st.isDirectory()) for (const e of readdirSync(p)) walk(join(p, e));
  };
  walk(dir);
  return out;
}

async function commitsAsRoot(outer: string, root: string): Promise<Project> {
  expect(process.getuid?.()).toBe(0);
  expect(lstatSync(outer).mode & 0o777).toBe(0o700);
  anthropic.reply = {
    text: "Committed ci.txt.",
    toolUse: { name: "Bash", input: { command: "id -u > ci.txt && git add ci.txt && git commit -qm 'from ci'", description: "commit" } },
  };
  const p = await containerProject(anthropic, KEY, { root });
  projects.push(p);
  const before = modes(outer);
  const r = await p.run(["run", "write ci.txt and commit it", "--code", "ci"]);
  expect(r.code, r.stderr).toBe(0);
  // The commit is on the task's branch, made by the agent as uid 1000 (never root).
  expect(sh(p.root, "git log --format=%s lazy/ci -1").out.trim()).toBe("from ci");
  expect(sh(p.root, "git show lazy/ci:ci.txt").out.trim()).toBe("1000");
  expect(sh(p.root, "git log --format=%s main -1").out.trim()).toBe("init");
  // No permission on the host changed: every path that was there has its mode and owner.
  const after = modes(outer);
  for (const [path, was] of before) if (!path.endsWith("/.git/index")) expect(`${path} ${after.get(path)}`).toBe(`${path} ${was}`);
  expect(lstatSync(outer).mode & 0o777).toBe(0o700);
  return p;
}

const mountsOf = (p: Project): string[] =>
  JSON.parse(sh("/", `docker inspect $(docker ps -aq --filter label=dev.lazy.root=${p.root})`).out)[0].Mounts.map(
    (m: { Destination: string }) => m.Destination,
  );

describe("lazy run as root in CI", () => {
  test("a checkout under a mktemp -d folder (0700): done, the commit on lazy/<task>, no mode changed", async () => {
    const outer = mkdtempSync(join(tmpdir(), "lazy-ci-"));
    made.push(outer);
    const root = join(outer, "checkout");
    mkdirSync(root);
    const p = await commitsAsRoot(outer, root);
    // The repository as git needs it, never the checkout (test/attacks/checkout-secrets.test.ts).
    expect(mountsOf(p)).toContain(`${root}/.git`);
    expect(mountsOf(p)).not.toContain(root);
  }, 300_000);

  test("the checkout is the mktemp -d folder itself (0700): done as well, the folder still 0700", async () => {
    const outer = mkdtempSync(join(tmpdir(), "lazy-ci-"));
    made.push(outer);
    const p = await commitsAsRoot(outer, outer);
    // The agent could not open the checkout: only its git folder is in the container.
    expect(mountsOf(p)).toContain(`${outer}/.git`);
    expect(mountsOf(p)).not.toContain(outer);
  }, 300_000);

  test("a checkout made under umask 077 (its .git 0700) is refused before any container, naming the folder and the remedy", async () => {
    const outer = mkdtempSync(join(tmpdir(), "lazy-ci-"));
    made.push(outer);
    const p = await containerProject(anthropic, KEY, { root: outer });
    projects.push(p);
    sh(outer, "chmod 0700 .git");
    const r = await p.run(["run", "anything", "--code", "umask"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`cannot read ${outer}/.git (mode 700)`);
    expect(r.stderr).toContain("umask 022");
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
  }, 120_000);
});
