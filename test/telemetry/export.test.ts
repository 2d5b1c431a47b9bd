/**
 * The exporter's bounds (src/telemetry/export.ts), against loopback collectors that hang, answer
 * slowly or answer huge: adding spans never waits on the collector, the queue stays at MAX_QUEUE
 * (the oldest turns dropped whole, counted), a turn past its cap arrives as a whole tree with the
 * cut counted, the stop's flush sends everything or gives up within its bound, and a failing
 * collector is said once.
 */
import { afterAll, expect, test } from "bun:test";
import type { AuditRow } from "../../src/proxy";
import type { TaskEvent } from "../../src/store";
import { Exporter, MAX_QUEUE } from "../../src/telemetry/export";
import { MAX_SPANS, type SpanPlan, turnSpans } from "../../src/telemetry/spans";
import { auditRow } from "../helpers/audit-row";
import { type Mode, type Receiver, receiver, type Span } from "../helpers/otlp";

const opened: Receiver[] = [];
afterAll(async () => {
  for (const r of opened) await r.close();
});

const plan = (n: number, turn = 1): SpanPlan => ({
  name: "invoke_agent claude",
  kind: "internal",
  start: Date.now() - 1000,
  end: Date.now(),
  attributes: { "gen_ai.operation.name": "invoke_agent", "lazy.turn": turn },
  children: Array.from({ length: n }, (_, i) => ({
    name: "chat m",
    kind: "client" as const,
    start: Date.now() - 900,
    end: Date.now() - 800 + i,
    attributes: { "gen_ai.operation.name": "chat" },
    children: [],
  })),
});

for (const mode of ["hang", "slow", "huge"] as Mode[])
  test(`a collector that answers "${mode}": adding never waits, the queue stays bounded, one warning`, async () => {
    const rx = await receiver();
    opened.push(rx);
    rx.mode = mode;
    const said: (string | null)[] = [];
    const e = new Exporter(rx.url, "test", (f) => said.push(f));
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) e.add(plan(999));
    const took = performance.now() - t0;
    // 20,000 spans made and queued on this thread: no export awaited.
    expect(took).toBeLessThan(5000);
    expect(e.stats.queued).toBeLessThanOrEqual(MAX_QUEUE);
    expect(e.stats.dropped).toBeGreaterThan(20_000 - MAX_QUEUE - 1024);
    // The event loop stays free while the export hangs: a timer fires on time.
    const late = await new Promise<number>((resolve) => {
      const at = performance.now();
      setTimeout(() => resolve(performance.now() - at - 50), 50);
    });
    expect(late).toBeLessThan(1000);
    await Bun.sleep(mode === "huge" ? 8000 : 7500);
    expect(said.filter((x) => x !== null).length).toBe(1);
    expect(e.stats.failed).toBeGreaterThan(0);
    await e.stop();
  }, 60_000);

/** Every span's parent is among the spans (a root has none). */
const orphans = (spans: Span[]) => {
  const ids = new Set(spans.map((s) => s.spanId));
  return spans.filter((s) => s.parentSpanId !== "" && !ids.has(s.parentSpanId));
};

test("a collector that answers: the flush sends every span before it returns, nothing dropped", async () => {
  const rx = await receiver();
  opened.push(rx);
  const e = new Exporter(rx.url, "test", () => {});
  e.add(plan(10));
  e.add(plan(1500, 2));
  await e.flush(10_000);
  expect(rx.spans.length).toBe(1512);
  expect(orphans(rx.spans)).toEqual([]);
  expect(e.stats).toMatchObject({ sent: 1512, queued: 0, dropped: 0, failed: 0, cut: 0, failing: null });
  await e.stop();
});

test("a flush against a collector that hangs gives up within its bound, every span it could not send counted", async () => {
  const rx = await receiver();
  opened.push(rx);
  rx.mode = "hang";
  const e = new Exporter(rx.url, "test", () => {});
  e.add(plan(1500));
  await e.flush(1000);
  expect(e.stats.sent).toBe(0);
  expect(e.stats.queued).toBe(0);
  expect(e.stats.dropped + e.stats.failed).toBe(1501);
  await Promise.race([e.stop(), Bun.sleep(500)]);
});

test("a backlog of turns: the oldest turns are dropped whole, and no span reaches the collector without its parent", async () => {
  const rx = await receiver();
  opened.push(rx);
  const e = new Exporter(rx.url, "test", () => {});
  // Ten turns of 1,000 spans while nothing is sent (one tick): the queue holds MAX_QUEUE.
  for (let turn = 1; turn <= 10; turn++) e.add(plan(999, turn));
  const kept = Math.floor(MAX_QUEUE / 1000);
  expect(e.stats.dropped).toBe((10 - kept) * 1000);
  expect(e.stats.queued).toBe(kept * 1000);
  await e.flush(10_000);
  expect(orphans(rx.spans)).toEqual([]);
  const turns = rx.spans.filter((s) => s.parentSpanId === "").map((s) => s.attributes["lazy.turn"]);
  expect(turns.sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: kept }, (_, i) => 10 - kept + 1 + i));
  expect(rx.spans.length).toBe(kept * 1000);
  await e.stop();
});

test("a turn with more model and tool calls than a turn's cap: a whole tree within the queue, and the counts say what was cut", async () => {
  const rx = await receiver();
  opened.push(rx);
  const T0 = Date.now() - 3_600_000;
  const rows: AuditRow[] = [];
  const events: TaskEvent[] = [];
  const CALLS = 3000;
  const MCPS = 600;
  for (let i = 0; i < CALLS; i++) {
    const at = T0 + i * 10;
    rows.push(
      auditRow({
        at,
        taskRef: "big",
        durationMs: 3,
        ttfbMs: 1,
        bytesIn: 1,
        bytesOut: 1,
        usage: null,
        lazyInMs: null,
        lazyOutMs: null,
        modelAsked: "m",
        modelServed: "m",
      }),
    );
    events.push({
      id: i * 2,
      taskId: "t1",
      at: new Date(at + 5).toISOString(),
      kind: "tool",
      data: { name: "mcp__lazy__note", id: `toolu_${i}` },
    });
    events.push({ id: i * 2 + 1, taskId: "t1", at: new Date(at + 8).toISOString(), kind: "output", data: { id: `toolu_${i}` } });
    if (i < MCPS)
      rows.push({
        ...rows.at(-1)!,
        at: at + 6,
        durationMs: 1,
        upstream: "lazy:mcp",
        note: "tools/call note",
        modelAsked: null,
        modelServed: null,
      });
  }
  const p = turnSpans({
    taskId: "t1",
    taskRef: "big",
    turn: 1,
    harness: "claude",
    wire: "anthropic",
    start: T0 - 10,
    end: T0 + CALLS * 10 + 10,
    to: "done",
    events,
    rows,
    scrub: (s) => s,
  });
  const e = new Exporter(rx.url, "test", () => {});
  e.add(p);
  expect(e.stats.queued).toBeLessThanOrEqual(MAX_QUEUE);
  await e.flush(20_000);
  expect(rx.spans.length).toBe(MAX_SPANS);
  expect(orphans(rx.spans)).toEqual([]);
  const root = rx.spans.find((s) => s.parentSpanId === "")!;
  const made = CALLS * 2 + MCPS + 1;
  const cut = Number(root.attributes["lazy.spans.chat_dropped"] ?? 0) + Number(root.attributes["lazy.spans.tool_dropped"] ?? 0);
  expect(cut).toBe(made - MAX_SPANS);
  expect(e.stats).toMatchObject({ sent: MAX_SPANS, dropped: 0, failed: 0, cut: made - MAX_SPANS });
  // Each kind kept its share: model calls, harness tool calls and MCP calls all present.
  const ops = (k: string, type?: string) =>
    rx.spans.filter((s) => s.attributes["gen_ai.operation.name"] === k && (!type || s.attributes["gen_ai.tool.type"] === type)).length;
  expect(ops("chat")).toBeGreaterThan(1000);
  expect(ops("execute_tool", "function")).toBeGreaterThan(1000);
  expect(ops("execute_tool", "extension")).toBe(MCPS);
  await e.stop();
}, 60_000);
