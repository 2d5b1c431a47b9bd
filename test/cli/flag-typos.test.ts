/**
 * "Did you mean" for a mistyped option too (issue 30, Deliver 7: gh's and kubectl's
 * conventions): the closest long option of that command is named, and nothing runs.
 * tier: fast (its `task add` is refused at the flag, before any engine is asked)
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

test("a mistyped option names the closest one of that command; one close to none says where the list is; nothing runs", async () => {
  const p = new Project();
  for (const [args, said] of [
    [["run", "--wiat", "x"], "Unknown option --wiat for lazy run. Did you mean --wait?"],
    [["task", "list", "--stats"], "Unknown option --stats for lazy task list. Did you mean --status?"],
    [["task", "add", "--fiel", "x"], "Unknown option --fiel for lazy task add. Did you mean --file?"],
    [["logs", "--zzzz", "x"], "Unknown option --zzzz for lazy logs; see lazy logs --help."],
  ] as const) {
    const r = await p.run([...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`lazy: ${said}\n`);
    expect(r.stdout).toBe("");
  }
  // Refused before any daemon was asked for anything.
  expect(existsSync(join(p.home, "daemon"))).toBe(false);
});
