/** AgentDir.lstat on a folder the agent writes: missing anywhere on the way is "missing", a link on the way is refused. */
import { afterAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as AgentDir from "../../src/agent-dir";

const root = mkdtempSync(join(tmpdir(), "lazy-agentdir-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

test("lstat: a missing file, or a missing folder on the way (a turn not begun yet), is null", () => {
  mkdirSync(join(root, "turns", "1"), { recursive: true });
  writeFileSync(join(root, "turns", "1", "exit.json"), "{}");
  expect(AgentDir.lstat(join(root, "turns"), "1/exit.json")?.isFile()).toBe(true);
  expect(AgentDir.lstat(join(root, "turns"), "1/nothing.json")).toBeNull();
  expect(AgentDir.lstat(join(root, "turns"), "2/exit.json")).toBeNull();
});

test("lstat: a link on the way is still refused, naming it", () => {
  mkdirSync(join(root, "elsewhere"), { recursive: true });
  symlinkSync(join(root, "elsewhere"), join(root, "turns", "3"));
  expect(() => AgentDir.lstat(join(root, "turns"), "3/exit.json")).toThrow(AgentDir.LinkRefused);
});
