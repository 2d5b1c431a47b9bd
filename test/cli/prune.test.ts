/**
 * `lazy prune` (issue 37, point 11): what ended tasks and old image builds left goes, and says so;
 * `--dry-run` lists the same and the space, and removes nothing; a task that can still be
 * reviewed keeps everything. Real Claude Code in real containers, a mock provider; an old build
 * of the project's image made on the engine as lazy would have labelled it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { commits, containerProject, launched, settledAs, teardown } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-PRUNECLI-${"p".repeat(69)}AA`;
let mock: Mock.MockProvider;
let p: Project;
let gone: { id: string; folder: string };
let kept: { id: string; folder: string; worktree: string; container: string };
const OLD = `lazy-project/prune-cli-${process.pid}:old`;
/** The id of the build the second one under OLD replaced. */
let untagged = "";
const image = (tag: string) => sh("/", `docker image inspect --format '{{.Id}}' ${tag}`).out.trim();

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY);
  mock.reply = commits("a.txt", "a", "done.");
  await launched(p, "gone", "write a.txt");
  await settledAs(p, "gone");
  await launched(p, "kept", "write a.txt too");
  await settledAs(p, "kept");
  await p.ok(["close", "gone"]);
  const slug = p.stateDir.split("/").at(-1)!;
  const idOf = async (code: string) => (await p.json(["task", "show", code])).task.id as string;
  const g = await idOf("gone");
  const k = await idOf("kept");
  gone = { id: g, folder: join(p.stateDir, "tasks", g) };
  kept = {
    id: k,
    folder: join(p.stateDir, "tasks", k),
    worktree: join(p.stateDir, "worktrees", "kept"),
    container: sh("/", `docker ps -aq --filter label=dev.lazy.task=${k}`).out.trim(),
  };
  // An older build of this project's image, labelled as lazy labels what it builds: nothing uses
  // it. Built twice under one tag, as a changed build context does: the first is left untagged.
  const build = (stamp: string) =>
    sh(
      "/",
      `printf 'FROM ${TEST_IMAGES.debian}\\nLABEL dev.lazy.context=${stamp}\\n' | docker build -q -t ${OLD} --label dev.lazy.image=1 --label dev.lazy.project=${slug} -`,
    );
  const first = build(`old-${process.pid}`);
  untagged = first.out.trim();
  const second = build(`older-${process.pid}`);
  if (first.code !== 0 || second.code !== 0 || !untagged.startsWith("sha256:")) throw new Error(`the old image: ${first.err}${second.err}`);
}, 600_000);

afterAll(async () => {
  sh("/", `docker rmi -f ${OLD} ${untagged}`);
  await teardown(p, mock);
});

describe("lazy prune", () => {
  test("--dry-run lists the ended task's folder and the unused old image, with sizes, and removes nothing", async () => {
    // What a closed task leaves: its state folder (home, harness folder, turns); the close took its container and worktree.
    expect(existsSync(gone.folder)).toBe(true);
    expect(kept.container).not.toBe("");
    const r = await p.json(["prune", "--dry-run"]);
    expect(r.dryRun).toBe(true);
    const names = r.removed.map((x: any) => `${x.kind} ${x.name} ${x.task ?? "-"}`);
    expect(names).toContain(`folder ${gone.folder} gone`);
    expect(names).toContain(`image ${OLD} -`);
    expect(names).toContain(`image ${untagged.slice(0, 19)} -`);
    // Nothing of the task that can still be reviewed, and not the image the config names now.
    expect(r.removed.filter((x: any) => x.task === "kept" || JSON.stringify(x).includes(kept.id))).toEqual([]);
    expect(r.removed.filter((x: any) => x.kind === "image")).toHaveLength(2);
    expect(r.live).toBe(1);
    expect(r.bytes).toBe(r.removed.reduce((n: number, x: any) => n + x.bytes, 0));
    expect(r.removed.find((x: any) => x.kind === "folder").bytes).toBeGreaterThan(0);
    expect(r.removed.find((x: any) => x.kind === "image").bytes).toBeGreaterThan(1_000_000);
    // Still all there.
    expect(existsSync(gone.folder)).toBe(true);
    expect(image(OLD)).not.toBe("");
    expect(image(untagged)).not.toBe("");
    // In words: what, whose, how big, and the total.
    const words = (await p.ok(["prune", "--dry-run"])).stdout;
    expect(words).toContain("Would remove:");
    expect(words).toMatch(new RegExp(`folder\\s+${gone.folder}\\s+task gone\\s+\\d`));
    expect(words).toMatch(/That would free \d+(\.\d)? (KiB|MiB|GiB)\./);
    expect(words).toContain("1 task can still run or be reviewed: nothing of it was touched");
  });

  test("lazy prune removes them, says what it removed and freed; the reviewable task keeps everything", async () => {
    const r = await p.ok(["prune"]);
    expect(r.stdout).toContain("Removed:");
    expect(r.stdout).toMatch(new RegExp(`image\\s+${OLD.replace(/[.]/g, "\\.")}`));
    expect(r.stdout).toMatch(/Freed \d+(\.\d)? (KiB|MiB|GiB)\./);
    expect(existsSync(gone.folder)).toBe(false);
    expect(image(OLD)).toBe("");
    expect(image(untagged)).toBe("");
    // The task that can still be reviewed: container, worktree, folder, and its diff.
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.task=${kept.id}`).out.trim()).toBe(kept.container);
    expect(existsSync(join(kept.worktree, "a.txt"))).toBe(true);
    expect(existsSync(join(kept.folder, "home"))).toBe(true);
    expect((await p.ok(["diff", "kept", "--stat"])).stdout).toContain("a.txt");
    // The image its container was made from is still there.
    expect(image(sh("/", `docker inspect --format '{{.Config.Image}}' ${kept.container}`).out.trim())).not.toBe("");
    const again = await p.ok(["prune"]);
    expect(again.stdout.trim()).toBe(
      "Nothing to prune. 1 task can still run or be reviewed: nothing of it was touched (lazy close or lazy reject ends one).",
    );
  });
});
