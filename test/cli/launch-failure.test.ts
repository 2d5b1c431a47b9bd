/**
 * Any launch error ends the turn `failed` with its cause, once (issue 30, Deliver 5): the bug
 * the issue names, replayed. A 1 MB prompt is refused at every door now (prompts.test.ts), so it
 * is planted in the store (as a task made by an older lazy would hold it); its turn's `docker
 * exec` is accepted and then fails (Linux refuses one argument over 128 KiB), so the supervisor
 * never started. Before the fix the task stayed `running` for good, the daemon logged an error
 * five times a second, and no command cleared it. Now the runner measures the command before the
 * task goes running: the launch fails once, with that cause, and the task closes.
 * Real container, real Docker; the mock provider must see nothing.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { anthropicProject, settled, teardown } from "../helpers/fixtures";
import { never, type Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-LAUNCHFAIL-" + "f".repeat(68) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;
beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic));

test("a prompt Linux would refuse as an argument fails its launch once with that cause; nothing stays running, and close ends it", async () => {
  await p.ok(["task", "add", "placeholder prompt", "--code", "planted"]);
  await p.ok(["daemon", "stop"]);
  const db = new Database(join(p.stateDir, "store.db"));
  db.query("UPDATE tasks SET prompt = ? WHERE code = 'planted'").run(`Say ok. ${"x".repeat(1024 * 1024)}`);
  db.close();
  anthropic.reset();
  const r = await p.run(["start", "planted"]);
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(
    /The turn's prompt \(with what lazy adds to it\) is \d+ bytes: the harness gets it as one argument, and Linux refuses one over 131071 bytes/,
  );
  const s = await settled(p, "planted", 60_000);
  expect(s.task.status).toBe("failed");
  const failed = s.events.filter((e: any) => e.kind === "status" && e.data.to === "failed");
  expect(failed).toHaveLength(1);
  expect(failed[0].data).toMatchObject({ from: "queued", launch: "refused" });
  expect(String(failed[0].data.error)).toContain("Linux refuses one over 131071 bytes");
  // Said once: a few seconds on, no second failure, no error repeated in the log.
  await never(
    async () =>
      (await p.api<any>("GET", "/api/tasks/planted")).events.filter((e: any) => e.kind === "status" && e.data.to === "failed").length > 1,
    3000,
    "a second failure",
  );
  const again = await p.api("GET", "/api/tasks/planted");
  expect(again.task.status).toBe("failed");
  expect(again.events.filter((e: any) => e.kind === "status" && e.data.to === "failed")).toHaveLength(1);
  const errors = p
    .log()
    .split("\n")
    .filter((l) => / ERROR /.test(l));
  expect(errors.length).toBeLessThanOrEqual(1);
  expect((await p.json(["task", "list"])).filter((t: any) => t.status === "running")).toEqual([]);
  // The person can clear it.
  await p.ok(["close", "planted"]);
  expect((await p.json(["task", "show", "planted"])).task.status).toBe("closed");
  expect(anthropic.received.filter((r) => r.method === "POST")).toEqual([]);
}, 600_000);
