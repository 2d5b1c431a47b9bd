/**
 * `lazy prune` under attack (issue 37, point 11). It removes on the host, as the daemon (root in
 * CI), so what a task left is hostile: an ended task's agent planted links to a host folder in
 * its home and its worktree, and its worktree's path was made a link to that folder; prune must
 * unlink them, never follow them (the folder and its file stay). A task still running and one
 * still to be reviewed are never touched (the running turn runs on, with its container, worktree
 * and folder). A container and images that look like lazy's but lack its labels (or carry another
 * project's) are never touched. Real Claude Code in real containers, a mock provider.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { bash, containerProject, hanging, launched, settledAs, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-PRUNEATTACK-${"q".repeat(66)}AA`;
let mock: Mock.MockProvider;
let p: Project;
let victim: string;
let slug: string;
const ids: Record<string, string> = {};
const tag = `${process.pid}-${Date.now()}`;
/** A container named as lazy names its task containers, with no label of lazy's. */
let unlabelled: string;
/** Images that look like lazy's: one with no label at all, one built for another project. */
const NO_LABEL = `lazy-project/prune-attack:nolabel-${tag}`;
const OTHER = `lazy/agent:0.0.0-prune-attack-${tag}`;
let pruned: { code: number; stdout: string; stderr: string };
let dry: any;
/** The agent's link in its home, as the host saw it before prune. */
let planted = false;
/** The ended task's folder as du counts it (KiB), without and with following links. */
const du = { plain: 0, followed: 0 };

const exists = (what: "container" | "image", ref: string) => sh("/", `docker ${what} inspect ${ref}`).code === 0;
const running = (id: string) => sh("/", `docker inspect --format '{{.State.Running}}' ${id}`).out.trim() === "true";
const containerOf = (id: string) => sh("/", `docker ps -aq --no-trunc --filter label=dev.lazy.task=${id}`).out.trim();

beforeAll(async () => {
  // The host folder the agent aims at, with a file it must not lose.
  victim = mkdtempSync(join(tmpdir(), "lazy-prune-victim-"));
  chmodSync(victim, 0o755);
  writeFileSync(join(victim, "precious"), "keep me\n");
  // A MiB of real blocks: a measure that followed a link into the victim would count it.
  writeFileSync(join(victim, "bulk"), Buffer.alloc(1024 * 1024, 7));
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY);
  slug = p.stateDir.split("/").at(-1)!;
  // ended: the agent plants links to the victim in its home and its worktree, then the task is closed.
  mock.reply = bash(
    "done.",
    `ln -s ${victim} "$HOME/escape" && ln -s ${victim} ./wlink && mkdir -p deep && ln -s ${victim}/precious deep/file && echo x > a.txt && git add a.txt && git commit -qm a`,
    "plant links",
  );
  await launched(p, "ended", "write a.txt");
  await settledAs(p, "ended");
  // review: done, to be reviewed.
  mock.reply = bash("done.", "echo r > r.txt && git add r.txt && git commit -qm r", "commit");
  await launched(p, "review", "write r.txt");
  await settledAs(p, "review");
  for (const code of ["ended", "review"]) ids[code] = (await p.json(["task", "show", code])).task.id;
  await p.ok(["close", "ended"]);
  // After the close its worktree is gone; one planted at its path as a link to the victim.
  mkdirSync(join(p.stateDir, "worktrees"), { recursive: true });
  symlinkSync(victim, join(p.stateDir, "worktrees", "ended"));
  // running: a turn held running (the provider never answers).
  await hanging(p, mock, "running", "wait");
  ids.running = (await p.json(["task", "show", "running"])).task.id;
  // Look-alikes without lazy's labels, stopped and unused.
  unlabelled = sh("/", `docker create --name lazy-${slug}-deadbeefdeadbeef ${TEST_IMAGES.debian} true`).out.trim();
  const build = (t: string, labels: string) =>
    sh("/", `printf 'FROM ${TEST_IMAGES.debian}\\nLABEL made.by=test\\n' | docker build -q -t ${t} ${labels} -`);
  if (
    build(NO_LABEL, "").code !== 0 ||
    build(OTHER, "--label dev.lazy.image=1 --label dev.lazy.project=another-project-1234abcd").code !== 0
  )
    throw new Error("could not build the look-alike images");
  const folder = join(p.stateDir, "tasks", ids.ended!);
  planted = lstatSync(join(folder, "home", "escape")).isSymbolicLink();
  du.plain = Number.parseInt(sh("/", `du -s -k -x ${folder}`).out, 10);
  du.followed = Number.parseInt(sh("/", `du -s -k -L ${folder}`).out, 10);
  dry = await p.json(["prune", "--dry-run"]);
  pruned = await p.run(["prune", "--json"]);
}, 900_000);

afterAll(async () => {
  sh("/", `docker rm -f ${unlabelled}; docker rmi -f ${NO_LABEL} ${OTHER}`);
  mock.behavior = { kind: "ok" };
  await teardown(p, mock);
  rmSync(victim, { recursive: true, force: true });
});

describe("lazy prune never follows a link a task planted", () => {
  test("the agent's links were there, and pointed at the victim", () => {
    // Without them the test below would prove nothing.
    expect(planted).toBe(true);
    const folder = join(p.stateDir, "tasks", ids.ended!);
    expect(dry.removed.map((x: any) => `${x.kind} ${x.name}`)).toEqual(
      expect.arrayContaining([`worktree ${join(p.stateDir, "worktrees", "ended")}`, `folder ${folder}`]),
    );
    // The dry run measured without following: the victim's bytes are not the worktree's.
    expect(dry.removed.find((x: any) => x.kind === "worktree").bytes).toBeLessThan(64 * 1024);
    // The ended task's folder: what du counts without following links, a MiB less than following them.
    expect(dry.removed.find((x: any) => x.kind === "folder").bytes).toBe(du.plain * 1024);
    expect(du.followed - du.plain).toBeGreaterThanOrEqual(1024);
  });

  test("prune unlinked the planted worktree and removed the ended task's folder; the victim's file is intact", () => {
    expect(pruned.code, pruned.stderr).toBe(0);
    const r = JSON.parse(pruned.stdout);
    expect(r.failed).toEqual([]);
    expect(existsSync(join(p.stateDir, "worktrees", "ended"))).toBe(false);
    expect(existsSync(join(p.stateDir, "tasks", ids.ended!))).toBe(false);
    expect(lstatSync(victim).isDirectory()).toBe(true);
    expect(readFileSync(join(victim, "precious"), "utf8")).toBe("keep me\n");
    expect(readFileSync(join(victim, "bulk")).length).toBe(1024 * 1024);
  });
});

describe("lazy prune never touches a task that can still run or be reviewed", () => {
  test("the running turn runs on: its container, worktree and folder are there", async () => {
    const r = JSON.parse(pruned.stdout);
    const touched = [...r.removed, ...r.failed].filter((x: any) => x.task === "running" || x.task === "review");
    expect(touched).toEqual([]);
    expect(r.live).toBe(2);
    expect((await p.json(["task", "show", "running"])).task.status).toBe("running");
    expect(running(containerOf(ids.running!))).toBe(true);
    expect(existsSync(join(p.stateDir, "worktrees", "running"))).toBe(true);
    expect(existsSync(join(p.stateDir, "tasks", ids.running!, "turns"))).toBe(true);
  });

  test("the task to review keeps its stopped container, worktree and folder, and can still be accepted", async () => {
    const c = containerOf(ids.review!);
    expect(c).not.toBe("");
    expect(running(c)).toBe(false);
    expect(readFileSync(join(p.stateDir, "worktrees", "review", "r.txt"), "utf8")).toBe("r\n");
    expect(existsSync(join(p.stateDir, "tasks", ids.review!, "home"))).toBe(true);
    expect((await p.ok(["diff", "review", "--stat"])).stdout).toContain("r.txt");
  });
});

describe("lazy prune never touches what lazy did not make for this project", () => {
  test("a stopped container named like lazy's, with no label of lazy's, stays", () => {
    expect(exists("container", unlabelled)).toBe(true);
    expect(JSON.stringify(JSON.parse(pruned.stdout))).not.toContain("deadbeefdeadbeef");
  });

  test("an unused image with no lazy label, and one lazy built for another project, stay", () => {
    expect(exists("image", NO_LABEL)).toBe(true);
    expect(exists("image", OTHER)).toBe(true);
    expect(JSON.stringify(dry)).not.toContain("prune-attack");
  });
});
