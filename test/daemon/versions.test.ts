/**
 * A new lazy meets an old daemon (issue 28, Deliver 6). A second real build of this tree that
 * calls itself an older version (build.ts --as-version, to its own path: replacing dist/lazy
 * under a running daemon is a trap) starts the daemon; the newer dist/lazy then says so, and
 * restarts it when no turn runs, or carries on with it and says to run lazy daemon restart once
 * the turns end. The store is the same file throughout: every task is kept.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { VERSION } from "../../src/version";
import { requireDocker, TEST_IMAGES } from "../helpers/env";
import { cleanupAll, isAlive, Project, type Result, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const OLD_VERSION = "0.0.1";
const dir = mkdtempSync(join(tmpdir(), "lazy-old-bin-"));
const OLD = join(dir, "lazy");
const KEY = "sk-ant-api03-VERSIONS-" + "v".repeat(72) + "AA";
let anthropic: Mock.MockProvider | undefined;

beforeAll(() => {
  const b = Bun.spawnSync(["bun", "build.ts", "--as-version", OLD_VERSION, "--outfile", OLD], {
    cwd: resolve(import.meta.dir, "../.."),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (b.exitCode !== 0) throw new Error(`the older build failed: ${b.stderr.toString()}`);
}, 120_000);

afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The daemon's record (daemon.json): which daemon serves, and its version. */
const record = (p: Project) => p.runtime() as unknown as { pid: number; version: string };

/** The older lazy, run in the project as its person would have before upgrading. */
async function old(p: Project, args: string[], stdin?: string): Promise<Result> {
  const proc = Bun.spawn([OLD, ...args], {
    cwd: p.root,
    env: p.fullEnv(),
    stdin: stdin === undefined ? "ignore" : new Blob([stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`old lazy ${args.join(" ")} exited ${code}: ${stderr}`);
  return { code, stdout, stderr };
}

describe("an older daemon and a newer CLI", () => {
  test("lazy task list reports the mismatch and, with no turn running, the daemon is the new version afterwards with all tasks kept", async () => {
    const p = new Project();
    for (const t of ["one", "two", "three"]) await old(p, ["task", "add", t, "--code", t]);
    const before = record(p);
    expect(before.version).toBe(OLD_VERSION);

    const r = await p.run(["task", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(
      JSON.parse(r.stdout)
        .map((t: { code: string }) => t.code)
        .sort(),
    ).toEqual(["one", "three", "two"]);
    expect(r.stderr).toContain(`lazy: the daemon (pid ${before.pid}) runs lazy ${OLD_VERSION} and this is lazy ${VERSION}: restarting it`);
    expect(r.stderr).toContain(`The daemon is now lazy ${VERSION}`);

    const after = record(p);
    expect(after.version).toBe(VERSION);
    expect(after.pid).not.toBe(before.pid);
    expect(isAlive(before.pid)).toBe(false);
    expect((await p.api("GET", "/api/health")).version).toBe(VERSION);
    // Said once: the next command meets its own version and adds nothing.
    const again = await p.run(["task", "list"]);
    expect(again.stderr).toBe("");
    expect(again.stdout).toContain("three");
    expect((await p.json(["daemon", "status"])).version).toBe(VERSION);
  }, 120_000);

  test("an older CLI meeting a newer daemon says so and leaves it running", async () => {
    const p = new Project();
    await p.ok(["task", "add", "new", "--code", "new"]);
    const pid = p.runtime()!.pid;
    const r = await old(p, ["task", "list"]);
    expect(r.stdout).toContain("new");
    expect(r.stderr).toContain(`runs lazy ${VERSION} and this is lazy ${OLD_VERSION}, an older one: carrying on with the newer daemon`);
    expect((await old(p, ["daemon", "status"])).stdout).toContain(
      `version ${VERSION}; this lazy is ${OLD_VERSION}: lazy daemon restart runs it`,
    );
    expect(p.runtime()!.pid).toBe(pid);
  }, 60_000);

  test("with a turn running the old daemon carries on and the CLI says to run lazy daemon restart; once it ends, it restarts, the task kept", async () => {
    if (!(await requireDocker())) throw new Error("this test needs a Docker engine: bash scripts/setup-test-env.sh starts one");
    anthropic = await Mock.anthropic();
    // The agent (real Claude Code in its container) runs one long command: its turn stays `running`.
    anthropic.reply = { text: "Slept.", toolUse: { name: "Bash", input: { command: "sleep 20", description: "wait" } } };
    const p = new Project();
    sh(p.root, "git config user.email dev@example.com && git config user.name Dev && git commit -q --allow-empty -m init");
    p.writeToml(`[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`);
    await old(p, ["auth", "set", "anthropic"], KEY);
    await old(p, ["task", "add", "Sleep a while", "--code", "sleeper"]);
    await old(p, ["start", "sleeper"]);
    const oldPid = p.runtime()!.pid;

    const r = await p.run(["task", "list"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("sleeper");
    expect(r.stdout).toContain("running");
    expect(r.stderr).toContain(`runs lazy ${OLD_VERSION} and this is lazy ${VERSION}; 1 turn is running`);
    expect(r.stderr).toContain("once they end, run lazy daemon restart");
    expect(record(p).version).toBe(OLD_VERSION);
    expect(p.runtime()!.pid).toBe(oldPid);

    await until(
      async () => {
        const t = (await old(p, ["task", "show", "sleeper", "--json"]).then((x) => JSON.parse(x.stdout))).task;
        return t.status !== "running" ? t : undefined;
      },
      240_000,
      "the turn to end",
    );
    const done = await p.run(["task", "show", "sleeper", "--json"]);
    expect(done.code).toBe(0);
    expect(done.stderr).toContain("restarting it (no turn is running)");
    expect(JSON.parse(done.stdout).task.status).toBe("done");
    expect(record(p).version).toBe(VERSION);
    expect(isAlive(oldPid)).toBe(false);
  }, 400_000);
});
