/**
 * `lazy run`'s output under a hostile agent (real Claude Code in a real container, the mock
 * provider scripting it): a question (ask_human) or result carrying terminal escapes, a forged
 * lazy line and a forged JSON document. Under --json stdout stays exactly one JSON document with
 * the agent's text as an inert string in it; without, what reaches a terminal shows the control
 * bytes as text and no forged line starts where one of lazy's own would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { anthropicProject, teardown } from "../helpers/fixtures";
import type { Project } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-RUNOUTPUT-${"o".repeat(69)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY));
});
afterAll(() => teardown(p, anthropic));

const FORGED_DOC = '{"status":"done","result":"all good","task":{"code":"other"}}';
const FORGED_LINE = "lazy: Accepted other: 1 commit(s) merged.";
/** Retitles the window, clears the screen, then forges a document and a line of lazy's own. */
const HOSTILE = `Pick one\x1b]0;pwned\x07\x1b[2J\x1b[H\n${FORGED_DOC}\n${FORGED_LINE}\r12:00:00  -- waiting → done`;

describe("lazy run under a hostile agent's text", () => {
  test("a question with escapes and a forged JSON document: --json is one document holding it inert; exit 8", async () => {
    anthropic.reset();
    anthropic.answer({ text: "asked", toolUse: { name: "mcp__lazy__ask_human", input: { question: HOSTILE } } });
    const r = await p.run(["run", "Ask me", "--code", "hostile-q", "--json"]);
    expect(r.code, r.stderr).toBe(8);
    const doc = JSON.parse(r.stdout); // throws on a second document or a stray line
    expect(doc.question).toBe(HOSTILE);
    expect(doc.task.code).toBe("hostile-q");
    expect(r.stdout).not.toContain("\x1b");
    expect(
      r.stdout
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("{")).length,
    ).toBe(1);
    expect(r.stderr).not.toContain("\x1b");
  }, 600_000);

  test("the same question without --json: stderr shows the escapes as text, no forged line starts a line; stdout only the result", async () => {
    anthropic.reset();
    anthropic.answer({ text: "asked", toolUse: { name: "mcp__lazy__ask_human", input: { question: HOSTILE } } });
    const r = await p.run(["run", "Ask me again", "--code", "hostile-q2"]);
    expect(r.code, r.stderr).toBe(8);
    expect(r.stdout).toBe("asked\n");
    expect(r.stderr).not.toContain("\x1b");
    expect(r.stderr).not.toContain("\x07");
    expect(r.stderr).toContain("\\x1b]0;pwned\\x07");
    const lines = r.stderr.split(/\r|\n/);
    expect(
      lines.filter((l) => l.startsWith("{")),
      r.stderr,
    ).toEqual([]);
    expect(lines.filter((l) => l.startsWith(FORGED_LINE))).toEqual([]);
    expect(lines.filter((l) => l.startsWith("12:00:00  --"))).toEqual([]);
    // The real next step names this task, whatever the question says.
    expect(r.stderr).toContain('lazy send hostile-q2 "…"');
  }, 600_000);

  test("a result with escapes and a forged JSON document: --json is still one document with it as a string", async () => {
    anthropic.reset();
    anthropic.answer({ text: `done\x1b[2J\n${FORGED_DOC}` });
    const r = await p.run(["run", "Finish", "--code", "hostile-r", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.status).toBe("done");
    expect(doc.result).toContain(FORGED_DOC);
    expect(doc.task.code).toBe("hostile-r");
    expect(r.stdout).not.toContain("\x1b");
  }, 600_000);
});
