/**
 * turnSpans (src/telemetry/spans.ts) on a turn made up here: the tree it makes, and what it leaves
 * out. The daemon's own use of it is proven end to end in otlp.test.ts and attacks/telemetry.test.ts;
 * this covers what a real harness seldom does (a tool name carrying a secret, a failed turn).
 */
import { expect, test } from "bun:test";
import type { AuditRow } from "../../src/proxy";
import type { TaskEvent } from "../../src/store";
import { turnSpans } from "../../src/telemetry";
import { auditRow } from "../helpers/audit-row";

const T0 = 1_800_000_000_000;
const row = (at: number, more: Partial<AuditRow> = {}): AuditRow =>
  auditRow({
    at,
    path: "/v1/messages?beta=true&key=QSECRET",
    durationMs: 100,
    ttfbMs: 50,
    usage: { input: 10, output: 5, cacheRead: 2, cacheWrite: 1 },
    lazyInMs: 0.2,
    modelAsked: "claude-sonnet-4-5",
    modelServed: "claude-sonnet-4-5-20250929",
    ...more,
  });
const ev = (id: number, at: number, kind: string, data: Record<string, unknown>): TaskEvent => ({
  id,
  taskId: "t1",
  at: new Date(at).toISOString(),
  kind,
  data,
});
const SECRET = `sk-ant-api03-lazy-${"a".repeat(88)}AA`;

test("a failed turn: chats under the turn, each tool under the call answered before it, secrets and paths out", () => {
  const plan = turnSpans({
    taskId: "t1",
    taskRef: "demo",
    turn: 3,
    harness: "claude",
    wire: "anthropic",
    start: T0,
    end: T0 + 5000,
    to: "failed",
    events: [
      ev(1, T0, "status", { to: "running" }),
      ev(2, T0 + 300, "tool", { name: `Bash${SECRET}`, input: `echo ${SECRET}`, id: "toolu_1" }),
      ev(3, T0 + 400, "output", { text: "boom", id: "toolu_1", error: true }),
    ],
    rows: [
      row(T0 + 100),
      row(T0 + 1000, { status: 529, usage: null, modelServed: null }),
      row(T0 + 1200, {
        role: "egress",
        upstream: "egress:evil.example:443",
        method: "CONNECT",
        note: "egress: evil.example:443 is not in [container] allow?x=QSECRET",
        status: 403,
      }),
      row(T0 + 1300, { upstream: "lazy:mcp", path: "/mcp", note: "tools/call finish", usage: null }),
      row(T0 + 9999_000),
      row(T0 + 200, { taskId: "other" }),
    ],
    scrub: (s) => s.split(SECRET).join("[secret]"),
  });
  expect(plan.name).toBe("invoke_agent claude");
  expect(plan.error).toBe("turn_failed");
  expect(plan.attributes).toMatchObject({ "lazy.turn": 3, "gen_ai.usage.input_tokens": 10, "error.type": "turn_failed" });
  const chats = plan.children.filter((c) => c.attributes["gen_ai.operation.name"] === "chat");
  expect(chats.map((c) => c.start)).toEqual([T0 + 100, T0 + 1000]);
  expect(chats[1]!.error).toBe("529");
  const tool = chats[0]!.children[0]!;
  expect(tool.name).toBe("execute_tool Bash[secret]");
  expect(tool.error).toBe("tool_error");
  expect(tool.end).toBe(T0 + 400);
  const mcp = chats[1]!.children.find((c) => c.attributes["mcp.method.name"] === "tools/call");
  expect(mcp?.attributes["gen_ai.tool.name"]).toBe("finish");
  expect(plan.events).toEqual([
    expect.objectContaining({
      name: "lazy.egress",
      attributes: expect.objectContaining({ "server.address": "evil.example", "server.port": 443, "lazy.egress.decision": "refused" }),
    }),
  ]);
  const all = JSON.stringify(plan);
  for (const gone of [SECRET, "QSECRET", "/v1/messages", "echo"]) expect(all).not.toContain(gone);
});
