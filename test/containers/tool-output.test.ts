/**
 * A tool call's output is kept with its call for the other harnesses too (issue 30): real Pi
 * (its `bash` tool, reported in `tool_execution_end`) and real Codex (its exec_command tool, reported in
 * `command_execution`'s `aggregated_output`), each told by the mock provider to run one command
 * in its task container; `lazy logs` shows the command, then what it printed under it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { codexProject, launched, settledAs, teardown } from "../helpers/fixtures";
import type { Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-TOOLOUT-${"t".repeat(74)}AA`;
const OPENAI_KEY = `sk-proj-TOOLOUT-${"o".repeat(40)}`;
let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;

beforeAll(async () => ({ anthropic, openai, p } = await codexProject(KEY, OPENAI_KEY)), 120_000);
afterAll(() => teardown(p, anthropic, openai));

/** The line index of the call, and the output line right under it (its output may come a line or two later). */
function callThenOutput(log: string, call: RegExp, output: RegExp): void {
  const lines = log.split("\n");
  const c = lines.findIndex((l) => call.test(l));
  const o = lines.findIndex((l, i) => i > c && output.test(l));
  expect(c, log).toBeGreaterThanOrEqual(0);
  expect(o, log).toBeGreaterThan(c);
}

describe("tool outputs from Pi and Codex", () => {
  test("real Pi's bash call: its command, then its output, in lazy logs", async () => {
    anthropic.answer({ text: "Pi ran it.", toolUse: { name: "bash", input: { command: "echo PI-SAYS-$((40+2))" } } });
    await launched(p, "pi-out", "Run a command", "--profile", "pi");
    await settledAs(p, "pi-out");
    const log = (await p.ok(["logs", "pi-out"])).stdout;
    callThenOutput(log, /\[bash\] echo PI-SAYS-\$\(\(40\+2\)\)$/, /^\d\d:\d\d:\d\d {2}└ PI-SAYS-42$/);
  }, 600_000);

  test("real Codex's exec_command call: its command, then its output, in lazy logs", async () => {
    openai.answer({ text: "Codex ran it.", toolUse: { name: "exec_command", input: { cmd: "echo CODEX-SAYS-$((40+2))" } } });
    await launched(p, "codex-out", "Run a command", "--profile", "codex");
    await settledAs(p, "codex-out");
    const log = (await p.ok(["logs", "codex-out"])).stdout;
    callThenOutput(log, /\[shell\] .*echo CODEX-SAYS-\$\(\(40\+2\)\)/, /^\d\d:\d\d:\d\d {2}└ CODEX-SAYS-42$/);
  }, 600_000);
});
