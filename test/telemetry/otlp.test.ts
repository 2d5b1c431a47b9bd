/**
 * [telemetry] otlp (issue 38): a real Claude Code turn in a container against the mock provider,
 * the mock scripting one Bash tool call, and a loopback OTLP receiver that decodes what lazy sent
 * with the official protobuf definitions (helpers/otlp.ts). The spans form the turn → chat →
 * execute_tool tree, named by the GenAI conventions; a collector that is down costs one warning.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { anthropicProject, bash, hanging, launched, settledAs, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import { type Receiver, receiver, type Span } from "../helpers/otlp";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-OTLP-${"o".repeat(76)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;
let rx: Receiver;

beforeAll(async () => {
  rx = await receiver();
  ({ anthropic, p } = await anthropicProject(KEY, { extra: `\n[telemetry]\notlp = "${rx.url}"\n` }));
}, 300_000);
afterAll(async () => {
  await teardown(p, anthropic);
  await rx?.close();
});

const ofTask = (id: string) => (s: Span) => s.attributes["gen_ai.conversation.id"] === id;

/** Launch a task, see its turn done, and wait for the turn's spans (its invoke_agent among them) at the receiver. */
async function spansOfTurn(code: string, prompt: string): Promise<{ id: string; spans: Span[] }> {
  await launched(p, code, prompt);
  await settledAs(p, code, "done");
  const id = (await p.json(["task", "show", code])).task.id as string;
  const spans = await until(
    () => {
      const mine = rx.spans.filter(ofTask(id));
      return mine.some((s) => s.name.startsWith("invoke_agent")) ? mine : undefined;
    },
    30_000,
    "the turn's spans at the receiver",
  );
  return { id, spans };
}

test("a turn's spans reach the collector as invoke_agent → chat → execute_tool, with the GenAI attributes", async () => {
  anthropic.answer(bash("Wrote it.", "echo hello > hello.txt && cat hello.txt", "write a file"));
  const { id, spans } = await spansOfTurn("otel", "Write hello.txt");
  const turn = spans.find((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent")!;
  expect(turn.name).toBe("invoke_agent claude");
  expect(turn.parentSpanId).toBe("");
  expect(turn.attributes).toMatchObject({
    "gen_ai.agent.name": "claude",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.conversation.id": id,
    "lazy.task.ref": "otel",
    "lazy.turn": 1,
    "lazy.task.status": "done",
  });
  expect(turn.resource["service.name"]).toBe("lazy");
  const chats = spans.filter((s) => s.attributes["gen_ai.operation.name"] === "chat");
  expect(chats.length).toBeGreaterThanOrEqual(2);
  for (const c of chats) {
    expect(c.traceId).toBe(turn.traceId);
    expect(c.parentSpanId).toBe(turn.spanId);
    expect(c.kind).toBe(3); // SPAN_KIND_CLIENT
  }
  const main = chats.filter((c) => c.attributes["gen_ai.usage.output_tokens"] !== undefined);
  expect(main.length).toBeGreaterThanOrEqual(2);
  for (const c of main) {
    expect(typeof c.attributes["gen_ai.request.model"]).toBe("string");
    expect(typeof c.attributes["gen_ai.response.model"]).toBe("string");
    expect(c.name).toBe(`chat ${c.attributes["gen_ai.request.model"]}`);
    expect(c.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
    expect(c.attributes["gen_ai.provider.name"]).toBe("anthropic");
    expect(c.attributes["server.address"]).toBe("127.0.0.1");
    expect(typeof c.attributes["lazy.proxy.own_ms"]).toBe("number");
    expect(c.attributes["http.response.status_code"]).toBe(200);
  }
  const tools = spans.filter((s) => s.attributes["gen_ai.operation.name"] === "execute_tool");
  const bashSpan = tools.find((s) => s.attributes["gen_ai.tool.name"] === "Bash");
  expect(bashSpan, spans.map((s) => `${s.name} ${JSON.stringify(s.attributes)}`).join("\n")).toBeDefined();
  expect(bashSpan!.name).toBe("execute_tool Bash");
  expect(String(bashSpan!.attributes["gen_ai.tool.call.id"])).toMatch(/^toolu_/);
  expect(bashSpan!.traceId).toBe(turn.traceId);
  // Its parent is a model call of the turn: the tree is turn → chat → execute_tool.
  expect(chats.map((c) => c.spanId)).toContain(bashSpan!.parentSpanId);
  // No content: the conventions make prompts, completions and tool arguments opt-in.
  const all = Buffer.concat(rx.bodies).toString("latin1");
  expect(all).not.toContain("Write hello.txt");
  expect(all).not.toContain("echo hello");
  expect(all).not.toContain("Wrote it.");
}, 600_000);

test("an MCP tool call is an execute_tool span under the harness's call of it, with the MCP method", async () => {
  anthropic.answer({ text: "Reported.", toolUse: { name: "mcp__lazy__report_progress", input: { note: "Halfway there." } } });
  const { id, spans } = await spansOfTurn("otelmcp", "Report progress");
  const shown = spans.map((s) => `${s.name} ${s.spanId} ← ${s.parentSpanId} ${JSON.stringify(s.attributes)}`).join("\n");
  const harness = spans.find((s) => s.attributes["gen_ai.tool.name"] === "mcp__lazy__report_progress");
  const bridge = spans.find((s) => s.attributes["gen_ai.tool.name"] === "report_progress");
  expect(harness, shown).toBeDefined();
  expect(bridge, shown).toBeDefined();
  expect(bridge!.name).toBe("execute_tool report_progress");
  expect(bridge!.attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.type": "extension",
    "mcp.method.name": "tools/call",
    "gen_ai.conversation.id": id,
  });
  expect(bridge!.parentSpanId, shown).toBe(harness!.spanId);
  expect(Buffer.concat(rx.bodies).toString("latin1")).not.toContain("Halfway there.");
}, 600_000);

test("a collector that is down: turns run as before, and the daemon log says so once", async () => {
  const url = rx.url;
  await rx.close();
  try {
    for (const code of ["down1", "down2"]) {
      anthropic.answer({ text: `done ${code}` });
      await launched(p, code, `Say done ${code}`);
      await settledAs(p, code, "done");
    }
    const warned = await until(
      () => {
        const lines = p
          .log()
          .split("\n")
          .filter((l) => l.includes("telemetry: spans could not be sent"));
        return lines.length ? lines : undefined;
      },
      30_000,
      "the telemetry warning",
    );
    await Bun.sleep(8000);
    const lines = p
      .log()
      .split("\n")
      .filter((l) => l.includes("telemetry: spans could not be sent"));
    expect(lines.length, lines.join("\n")).toBe(1);
    expect(warned[0]).toContain(url);
    expect(warned[0]).toContain("[telemetry] otlp");
  } finally {
    rx = await receiver(Number(new URL(url).port));
  }
}, 600_000);

test("lazy daemon stop: the turn it ends reaches the collector before the stop returns", async () => {
  await hanging(p, anthropic, "laststop", "Wait for it");
  const id = (await p.json(["task", "show", "laststop"])).task.id as string;
  try {
    await p.ok(["daemon", "stop"]);
    // No waiting: the daemon sent it on its way out (bounded), so it is here as the stop returns.
    const spans = rx.spans.filter(ofTask(id));
    const turn = spans.find((s) => s.attributes["gen_ai.operation.name"] === "invoke_agent");
    expect(turn, spans.map((s) => s.name).join("\n")).toBeDefined();
    expect(turn!.attributes["lazy.task.status"]).toBe("failed");
  } finally {
    anthropic.reset();
  }
}, 600_000);

test("lazy daemon stop with a collector that hangs: the stop completes, and the daemon log says what it gave up", async () => {
  rx.mode = "hang";
  try {
    await hanging(p, anthropic, "hangstop", "Wait for it");
    await p.ok(["daemon", "stop"]);
    const lines = p
      .log()
      .split("\n")
      .filter((l) => l.includes("telemetry: stopping"));
    expect(lines.length, p.log().split("\n").slice(-30).join("\n")).toBe(1);
    expect(lines[0]).toContain("spans did not reach");
    expect(lines[0]).toContain("[telemetry] otlp");
  } finally {
    rx.mode = "ok";
    anthropic.reset();
  }
}, 600_000);
