/**
 * Attacks on how lazy reads lazy.toml itself (issue 26, the attacker's pass). The file comes with
 * the checkout: a pull (git stores links) or another process can make it a link to a FIFO, to
 * /dev/zero, or a file of gigabytes. The CLI reads it before each command and the daemon before
 * every API request, on its main thread.
 *
 * Against the code before this probe (config/load.ts and trust.ts read it whole with
 * readFileSync): a link to a FIFO hung `lazy task list` and the daemon's main thread for good
 * (the FIFO test, run against that build: the CLI was still waiting after 20 s, and so was every
 * API request after it); /dev/zero is read until memory runs out (ENOMEM at a 4 GB ulimit, checked
 * by hand, not run against the old build here); a 2 MiB file was parsed whole. The Dockerfile
 * lazy.toml names was read the same way at launch (containers/image.ts), and so was
 * .worktreeinclude (git/index.ts): both FIFO tests hung there.
 */
import { describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lazyWithin, oneRequest, upstream, upstreamsForFile } from "../helpers/fixtures";
import { Project, sh } from "../helpers/lazy";

const KEY = "sk-ant-api03-PROBECFG-" + "c".repeat(72) + "AA";
const up = upstreamsForFile();

/** lazy with a deadline: a command that hangs is killed and reported as such. */
const bounded = (p: Project, args: string[], ms = 20_000) => lazyWithin(p, args, ms);

/** A project whose daemon runs on the trusted good upstream. */
async function running(): Promise<Project> {
  const p = new Project({ toml: upstream(up.good.url) });
  await p.setCredential("anthropic", KEY);
  up.good.reset();
  up.attacker.reset();
  return p;
}

/** A link at `path` to a FIFO nobody writes to: whatever reads it waits forever. */
function fifoAt(path: string): void {
  const dir = mkdtempSync(join(tmpdir(), "lazy-probe-fifo-"));
  up.scratch.push(dir);
  execFileSync("mkfifo", [join(dir, "fifo")]);
  symlinkSync(join(dir, "fifo"), path);
}

/** Task `code` started: neither lazy start nor the daemon hangs, the task fails naming `why`, and no model request went out. */
async function launchFails(p: Project, code: string, prompt: string, why: string): Promise<void> {
  const add = await bounded(p, ["task", "add", prompt, "--code", code]);
  expect(add.hung, "lazy task add hung").toBe(false);
  if (add.code !== 0) {
    // What the launch reads first (the Dockerfile lazy.toml names) is read by the preflight:
    // refused there, naming it, before any task is stored (issue 37).
    expect(add.code).toBe(4);
    expect(add.stderr).toContain(why);
    expect((await p.json<{ code: string }[]>(["task", "list"])).map((t) => t.code)).not.toContain(code);
    expect(up.good.received.filter((r) => r.method === "POST")).toEqual([]);
    return;
  }
  const start = await bounded(p, ["start", code]);
  expect(start.hung, "lazy start hung").toBe(false);
  const show = await bounded(p, ["task", "show", code, "--json"]);
  expect(show.hung, "the daemon stopped answering").toBe(false);
  const t = await p.json(["task", "show", code]);
  expect(t.task.status).toBe("failed");
  // The reason is the task's (lazy task show), or the launch's refusal names it (lazy start).
  expect(`${JSON.stringify(t.events)}\n${start.stderr}`).toContain(why);
  expect(up.good.received.filter((r) => r.method === "POST")).toEqual([]);
}

/** Every command still answers, says lazy.toml is unreadable, and the daemon keeps the trusted upstream. */
async function survives(p: Project, why: string): Promise<void> {
  for (const args of [
    ["task", "list"],
    ["task", "add", "still works", "--code", "still"],
  ]) {
    const r = await bounded(p, args);
    expect(r.hung, `lazy ${args.join(" ")} hung`).toBe(false);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(why);
  }
  expect(await oneRequest(p)).toBe(200);
  expect(up.good.received.filter((r) => r.method === "POST")).toHaveLength(1);
  expect(up.attacker.received).toEqual([]);
}

describe("a lazy.toml that is not a small plain file", () => {
  test("a link to a FIFO (a pull brings the link, another process made the FIFO): no command hangs, the daemon answers and keeps its config", async () => {
    const p = await running();
    rmSync(join(p.root, "lazy.toml"));
    fifoAt(join(p.root, "lazy.toml"));
    await survives(p, "is not a regular file (a FIFO, device or folder, perhaps behind a link), so lazy does not read it");
  }, 120_000);

  test("a link to /dev/zero: refused at once, the daemon's memory stays where it was", async () => {
    const p = await running();
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.runtime()!.pid}/status`, "utf8"))![1]) / 1024;
    const before = rss();
    rmSync(join(p.root, "lazy.toml"));
    symlinkSync("/dev/zero", join(p.root, "lazy.toml"));
    await survives(p, "is not a regular file");
    expect(rss() - before).toBeLessThan(200);
  }, 120_000);

  test("a 2 MiB lazy.toml naming the attacker's upstream after the padding: refused by its size, unparsed", async () => {
    const p = await running();
    writeFileSync(join(p.root, "lazy.toml"), `${"#".repeat(2 * 1024 * 1024)}\n${upstream(up.attacker.url)}`);
    await survives(p, "is larger than 1048576 bytes, so lazy does not read it");
    const doctor = await bounded(p, ["doctor"]);
    expect(doctor.hung).toBe(false);
    expect(doctor.stderr + "").not.toContain(up.attacker.url);
  }, 120_000);

  test("the Dockerfile lazy.toml names, made a link to a FIFO by a pull: the launch fails naming it, and the daemon goes on answering", async () => {
    const p = await running();
    mkdirSync(join(p.root, "ci"));
    writeFileSync(join(p.root, "ci/Dockerfile"), "FROM scratch\n");
    p.writeToml(`[container]\ndockerfile = "ci/Dockerfile"\n\n${upstream(up.good.url)}`);
    sh(
      p.root,
      "git config user.email dev@example.com && git config user.name Dev && echo lazy.toml > .gitignore && git add -A && git commit -qm init",
    );
    // The daemon takes the trusted config naming the Dockerfile now, before the pull swaps the file.
    expect((await p.run(["task", "list"])).stderr).toBe("");
    rmSync(join(p.root, "ci/Dockerfile"));
    fifoAt(join(p.root, "ci/Dockerfile"));
    await launchFails(p, "fifo", "build it", "is not a regular file (a FIFO, device or folder, perhaps behind a link)");
  }, 120_000);

  test(".worktreeinclude made a link to a FIFO by a pull: the launch is refused naming it, and the daemon goes on answering", async () => {
    const p = await running();
    sh(
      p.root,
      "git config user.email dev@example.com && git config user.name Dev && echo lazy.toml > .gitignore && git add -A && git commit -qm init",
    );
    fifoAt(join(p.root, ".worktreeinclude"));
    // A .worktreeinclude nobody trusted: the launch is refused before it is read as a list.
    await launchFails(
      p,
      "incl",
      "copy what it names",
      ".worktreeinclude is not a regular file (a FIFO, device or folder, perhaps behind a link)",
    );
  }, 120_000);
});
