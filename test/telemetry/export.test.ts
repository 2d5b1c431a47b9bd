/**
 * The exporter's bounds (src/telemetry/export.ts), against loopback collectors that hang, answer
 * slowly or answer huge: adding spans never waits on the collector, the queue stays at MAX_QUEUE
 * (the oldest dropped, counted), and a failing collector is said once.
 */
import { afterAll, expect, test } from "bun:test";
import { Exporter, MAX_QUEUE } from "../../src/telemetry/export";
import type { SpanPlan } from "../../src/telemetry/spans";
import { type Mode, type Receiver, receiver } from "../helpers/otlp";

const opened: Receiver[] = [];
afterAll(async () => {
  for (const r of opened) await r.close();
});

const plan = (n: number): SpanPlan => ({
  name: "invoke_agent claude",
  kind: "internal",
  start: Date.now() - 1000,
  end: Date.now(),
  attributes: { "gen_ai.operation.name": "invoke_agent" },
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

test("a collector that answers: every span sent, nothing dropped", async () => {
  const rx = await receiver();
  opened.push(rx);
  const e = new Exporter(rx.url, "test", () => {});
  e.add(plan(10));
  await e.flush();
  const deadline = Date.now() + 10_000;
  while (rx.spans.length < 11 && Date.now() < deadline) await Bun.sleep(50);
  expect(rx.spans.length).toBe(11);
  expect(e.stats).toMatchObject({ sent: 11, dropped: 0, failed: 0, failing: null });
  await e.stop();
});
