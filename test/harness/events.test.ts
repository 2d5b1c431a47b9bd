/**
 * A tool call and its output as `lazy logs` prints them, from each harness's event lines (issue
 * 30). Claude Code, Codex and Pi are proven with the real agents (test/dashboard/review.test.ts,
 * test/containers/tool-output.test.ts); cursor-agent cannot be installed here, so its lines are
 * the shape its docs give (cursor.com/docs/cli/reference/output-format). Also the bound on what
 * is kept of an output, and inputs shown as a person reads them, not as JSON.
 */
import { describe, expect, test } from "bun:test";
import { parseEvent } from "../../src/harness";
import { line } from "../../src/lines";

const AT = "2026-12-05T01:02:03.000Z";
const shown = (harness: Parameters<typeof parseEvent>[0], ...events: object[]) =>
  events.flatMap((e) => parseEvent(harness, JSON.stringify(e))).map((e) => line({ at: AT, kind: e.kind, data: e.data as never }));

describe("tool calls as a person reads them", () => {
  test("cursor-agent: the call's arguments, then its result under it; a failed call says so", () => {
    expect(
      shown(
        "cursor",
        { type: "tool_call", subtype: "started", call_id: "c1", tool_call: { shellToolCall: { args: { command: "ls -a" } } } },
        {
          type: "tool_call",
          subtype: "completed",
          call_id: "c1",
          tool_call: {
            shellToolCall: { args: { command: "ls -a" }, result: { success: { stdout: ".\n..\nsrc\n", stderr: "", exitCode: 0 } } },
          },
        },
        {
          type: "tool_call",
          subtype: "completed",
          call_id: "c2",
          tool_call: { readToolCall: { args: { path: "x" }, result: { error: { message: "no such file" } } } },
        },
      ),
    ).toEqual(["01:02:03  [shellToolCall] ls -a", "01:02:03  └ .\n            ..\n            src", "01:02:03  └ (error) no such file"]);
  });

  test("an input with several fields is one field a line; an empty output says so", () => {
    expect(
      shown(
        "claude",
        {
          type: "assistant",
          message: {
            content: [{ type: "tool_use", id: "t", name: "Edit", input: { file_path: "a.ts", old_string: "x", new_string: "y" } }],
          },
        },
        { type: "user", message: { content: [{ type: "tool_result", tool_use_id: "t", content: [] }] } },
      ),
    ).toEqual(["01:02:03  [Edit] file_path: a.ts\n          old_string: x\n          new_string: y", "01:02:03  └ (no output)"]);
  });

  test("lazy's own steps read as sentences, not JSON; a setup's output stays indented under its line", () => {
    const at = (kind: string, data: object) => line({ at: AT, kind, data: data as never });
    expect(at("created", { status: "queued" })).toBe("01:02:03  -- created (queued)");
    expect(at("setup", { code: 1, output: "npm ERR! x\n01:02:03  -- running → done\n" })).toBe(
      "01:02:03  -- setup exited 1\n            npm ERR! x\n            01:02:03  -- running → done",
    );
    expect(at("build", { done: "lazy-img:1" })).toBe("01:02:03  -- built lazy-img:1");
  });

  test("an output past its bound keeps its head and its end, and says how much was cut", () => {
    const big = `${"h".repeat(10_000)}${"t".repeat(10_000)}END`;
    const [e] = parseEvent(
      "pi",
      JSON.stringify({ type: "tool_execution_end", toolCallId: "p", result: { content: [{ type: "text", text: big }] } }),
    );
    expect(e!.kind).toBe("output");
    const d = e!.data as { text: string; cut: number };
    expect(d.cut).toBe(big.length - 8_000);
    expect(d.text.startsWith("h".repeat(6_000))).toBe(true);
    expect(d.text.endsWith("tEND")).toBe(true);
    expect(d.text).toContain(`… (cut: ${d.cut.toLocaleString("en-US")} bytes) …`);
  });
});
