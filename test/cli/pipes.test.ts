/**
 * Output that survives pipes (issue 28): a CI job reading lazy's output through `jq` or a slow
 * reader gets all of it, not the first 64 KiB, and a reader that leaves early (`| head`) ends
 * lazy quietly with exit code 0.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { upstream } from "../helpers/fixtures";
import { BIN, cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let mock: Mock.MockProvider | undefined;
afterAll(() => cleanupAll(mock));

/** Run a shell pipeline in the project, with its environment; `$LAZY` is this build. */
function pipeline(p: Project, cmd: string): { code: number; out: string; err: string } {
  const r = Bun.spawnSync(["bash", "-c", `set -o pipefail; ${cmd}`], {
    cwd: p.root,
    env: p.fullEnv({ LAZY: BIN }),
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: r.exitCode ?? -1, out: r.stdout.toString(), err: r.stderr.toString() };
}

describe("output through a pipe", () => {
  test("1,000 tasks: task list --json | jq length prints 1000, with a fast reader and a slow one", async () => {
    const p = new Project();
    await p.ok(["task", "add", "the first", "--code", "first"]);
    for (let i = 1; i < 1000; i++) await p.api("POST", "/api/tasks", { prompt: `task number ${i} ${"padding ".repeat(10)}` });
    const fast = pipeline(p, "$LAZY task list --json | jq length");
    expect(fast.err).toBe("");
    expect(fast.out.trim()).toBe("1000");
    // A reader that starts late: the pipe fills, and lazy must wait for it rather than drop the rest.
    const slow = pipeline(p, "$LAZY task list --json | (sleep 1; jq length)");
    expect(slow.out.trim()).toBe("1000");
    // The same bytes through a pipe as into a file.
    const file = join(p.root, "list.json");
    expect(pipeline(p, `$LAZY task list --json > ${file}`).code).toBe(0);
    const piped = pipeline(p, "$LAZY task list --json | cat");
    expect(piped.out.length).toBeGreaterThan(131_072);
    expect(piped.out).toBe(readFileSync(file, "utf8"));
  }, 120_000);

  test("stats audit --json through a pipe equals the same command written to a file", async () => {
    // Rows of real calls: a host session's own key (not a placeholder) is forwarded to the
    // provider as is and audited. Refusals of callers lazy cannot attribute would be counted
    // lines, not rows (proxy/audit/refusals.ts).
    mock = await Mock.anthropic();
    const p = new Project({ toml: upstream(mock.url) });
    await p.ok(["daemon", "start"]);
    const proxy = p.runtimeProxyUrl();
    for (let i = 0; i < 40; i++)
      await Promise.all(
        Array.from({ length: 25 }, (_, j) =>
          fetch(`${proxy}/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": `sk-ant-api03-own-${"d".repeat(40)}${i}x${j}`, "content-type": "application/json" },
            body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
          }).then((r) => r.arrayBuffer()),
        ),
      );
    const file = join(p.root, "audit.json");
    let rows = 0;
    for (let i = 0; i < 50 && rows < 1000; i++) {
      await Bun.sleep(200);
      expect(pipeline(p, `$LAZY stats audit --json --limit 1000 > ${file}`).code).toBe(0);
      rows = (JSON.parse(readFileSync(file, "utf8")).rows ?? []).length;
    }
    expect(rows).toBe(1000);
    const piped = pipeline(p, "$LAZY stats audit --json --limit 1000 | (sleep 1; cat)");
    expect(piped.code).toBe(0);
    expect(piped.out.length).toBeGreaterThan(131_072);
    expect(piped.out).toBe(readFileSync(file, "utf8"));
  }, 120_000);

  test("a reader that leaves early: lazy watch | head exits 0 and says nothing", async () => {
    const p = new Project();
    await p.ok(["task", "add", "one", "--code", "one"]);
    const watch = Bun.spawn(["bash", "-c", "set -o pipefail; timeout 60 $LAZY watch | head -n 2"], {
      cwd: p.root,
      env: p.fullEnv({ LAZY: BIN }),
      stdout: "pipe",
      stderr: "pipe",
    });
    // A live project: events keep coming, so watch writes again after head has gone.
    for (let i = 0; i < 100 && watch.exitCode === null; i++) {
      await p.api("POST", "/api/tasks", { prompt: `more ${i}` });
      await Bun.sleep(100);
    }
    const [out, err, code] = await Promise.all([new Response(watch.stdout).text(), new Response(watch.stderr).text(), watch.exited]);
    expect(code).toBe(0);
    expect(out.trim().split("\n")).toHaveLength(2);
    expect(err).toBe("");
  }, 120_000);
});
