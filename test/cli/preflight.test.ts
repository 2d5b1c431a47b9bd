/**
 * The preflight (issue 37, point 6) through the real binary: each launch problem is refused before
 * any task is stored — exit 4, one message with its cause and remedy, `lazy task list` empty — and
 * lazy doctor runs the same checks without starting a daemon.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { needDocker, TEST_IMAGES } from "../helpers/env";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-preflight-test-key";
let anthropic: Mock.MockProvider | undefined;
afterAll(() => cleanupAll(anthropic));

const upstream = () => `[proxy.upstreams]\nanthropic = "${anthropic!.url}"\n`;

/** No task stored: the list (which starts a daemon if none runs) is empty. */
async function noTask(p: Project): Promise<void> {
  expect(await p.json<unknown[]>(["task", "list"])).toEqual([]);
}

const daemonRuns = (p: Project) => existsSync(join(p.home, "daemon")) && !!p.runtime();

describe("preflight", () => {
  test("a folder that is not a git repository: refused with the remedy, and no daemon is started for it", async () => {
    const p = new Project({ toml: "" });
    rmSync(join(p.root, ".git"), { recursive: true, force: true });
    for (const args of [
      ["task", "add", "hello"],
      ["run", "hello"],
      ["task", "add", "hello", "--n", "2"],
    ]) {
      const r = await p.run(args);
      expect(r.code).toBe(4);
      expect(r.stderr).toContain(`${p.root} is not a git repository`);
      expect(r.stderr).toContain("git init");
      expect(r.stderr).not.toContain("fatal:");
    }
    expect(daemonRuns(p)).toBe(false);
    // Doctor says it too, and starts nothing either.
    const d = await p.run(["doctor"]);
    expect(d.stdout).toMatch(/FAIL\s+git\s+.* is not a git repository/);
    expect(d.stdout).toContain("daemon   not running");
    expect(daemonRuns(p)).toBe(false);
  });

  test("a repository with no commit: refused naming the cause, no task stored", async () => {
    const p = new Project({ toml: "", commit: false });
    const r = await p.run(["task", "add", "hello"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("has no commit yet");
    expect(r.stderr).toContain("git commit");
    expect(daemonRuns(p)).toBe(false);
    await noTask(p);
  });

  test("an image name with a typo: says the image is missing and how to fix it, not an internal error; nothing stored", async () => {
    await needDocker();
    anthropic ??= await Mock.anthropic();
    const typo = `lazy-test/nodee-${crypto.randomUUID().slice(0, 8)}:bookworm`;
    const p = new Project({ toml: `[container]\nimage = "${typo}"\n\n${upstream()}` });
    await p.setCredential("anthropic", KEY);
    for (const args of [
      ["run", "hello"],
      ["task", "add", "hello"],
      ["run", "hello", "--n", "2"],
    ]) {
      const r = await p.run(args);
      expect(r.code).toBe(4);
      expect(r.stderr).toContain(`The image "${typo}" that [container] image names is not on the Docker engine`);
      expect(r.stderr).toContain("typo");
      expect(r.stderr).toContain("fix [container] image in lazy.toml");
      expect(r.stderr).not.toContain("internal error");
    }
    // The dashboard's and the API's add: the same refusal, as data with its code, and nothing stored.
    const api = await p.api("POST", "/api/tasks", { prompt: "from the dashboard" }).catch((e: Error) => e.message);
    expect(api).toContain("409");
    expect(api).toContain('"code":"preflight_refused"');
    expect(api).toContain(`"facts":{"reason":"preflight","check":"image","found":{"kind":"image_missing","tag":"${typo}"`);
    expect(api).toContain(typo);
    await noTask(p);
    // Doctor names it without pulling.
    const d = await p.run(["doctor"]);
    expect(d.stdout).toContain(`[container] image = "${typo}" is not on the Docker engine`);
  }, 120_000);

  test("an image without the harness: refused before the task is stored (not 'agent failed'), the output shown; doctor fails it too", async () => {
    await needDocker();
    anthropic ??= await Mock.anthropic();
    const p = new Project({ toml: `[container]\nimage = "${TEST_IMAGES.node}"\n\n${upstream()}` });
    await p.setCredential("anthropic", KEY);
    const run = await p.run(["run", "hello"]);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`The claude harness does not run in the image ${TEST_IMAGES.node}`);
    expect(run.stderr).toContain("executable file not found");
    expect(run.stderr).toContain("lazy's default image has it");
    const group = await p.run(["task", "add", "hello", "--n", "2"]);
    expect(group.code).toBe(4);
    expect(group.stderr).toContain("The claude harness does not run");
    await noTask(p);
    const d = await p.run(["doctor"]);
    expect(d.code).not.toBe(0);
    expect(d.stdout).toMatch(/FAIL\s+harness\s+the claude harness does not run in the image/);
  }, 120_000);

  test("the shell names another Docker engine than the running daemon's: refused naming both, with the remedy", async () => {
    const p = new Project({ toml: "" });
    await p.ok(["daemon", "start"]);
    const other = "tcp://127.0.0.1:9";
    const r = await p.run(["task", "add", "hello"], { env: { DOCKER_HOST: other } });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`This shell names the Docker engine ${other} (DOCKER_HOST)`);
    expect(r.stderr).toMatch(/the running daemon uses unix:\/\/\S+/);
    expect(r.stderr).toContain("Run lazy daemon restart from this shell");
    const run = await p.run(["run", "hello"], { env: { DOCKER_HOST: other } });
    expect(run.code).toBe(4);
    await noTask(p);
    // Doctor: the same finding, blocking.
    const d = await p.run(["doctor"], { env: { DOCKER_HOST: other } });
    expect(d.stdout).toMatch(/FAIL\s+docker\s+this shell names the Docker engine tcp:\/\/127\.0\.0\.1:9/);
  }, 60_000);

  test("lazy doctor never starts a stopped daemon, nor says it runs", async () => {
    const p = new Project({ toml: "" });
    await p.ok(["daemon", "start"]);
    await p.ok(["daemon", "stop"]);
    const d = await p.run(["doctor"]);
    expect(d.stdout).toContain("daemon   not running");
    expect(d.stdout).not.toMatch(/ok\s+daemon\s+running/);
    expect(daemonRuns(p)).toBe(false);
  }, 60_000);

  test("a harness that runs: the task is stored, and the check is remembered per image id for the next launch", async () => {
    await needDocker();
    anthropic ??= await Mock.anthropic();
    const p = new Project({ toml: `[container]\nbase = "${TEST_IMAGES.node}"\n\n${upstream()}` });
    await p.setCredential("anthropic", KEY);
    // The default image (on the test base) is built by the first container test; build it here if it is missing.
    const first = await p.run(["task", "add", "hello", "--code", "one"]);
    expect(first.code).toBe(0);
    const cache = join(p.stateDir, "preflight.json");
    if (existsSync(cache)) {
      const c = JSON.parse(readFileSync(cache, "utf8")) as Record<string, { claude?: { version: string } }>;
      const entry = Object.entries(c)[0]!;
      expect(entry[0]).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(entry[1].claude?.version).toContain("Claude Code");
    }
    await p.ok(["task", "add", "again", "--code", "two"]);
    expect((await p.json<{ code: string }[]>(["task", "list"])).map((t) => t.code)).toEqual(["one", "two"]);
  }, 120_000);
});
