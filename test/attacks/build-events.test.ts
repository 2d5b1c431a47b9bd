/**
 * What a build can make lazy store. A build's steps and output lines become the task's `build`
 * events (the CLI shows them live). A build that goes on — a Dockerfile of thousands of steps, a
 * step that prints for hours — must not grow the store without end. BuildOutput keeps at most
 * EVENTS_MAX events for a build, says once that it stopped, and keeps each one bounded. (Driven
 * directly: a build of 1,800 steps would take the test half an hour.)
 */
import { expect, test } from "bun:test";
import { BuildOutput } from "../../src/containers/project";

test("a build of endless steps and lines stores at most EVENTS_MAX bounded events, and says once that it stopped", async () => {
  const events: Record<string, unknown>[] = [];
  const out = new BuildOutput((data) => events.push(data));
  try {
    for (let i = 0; i < 5000; i++) out.line(`Step ${i + 1}/5000 : RUN echo ${"x".repeat(10_000)}`);
  } finally {
    out.end();
  }
  expect(events.length).toBe(BuildOutput.EVENTS_MAX);
  expect(String(events.at(-1)!.output)).toContain("lazy stores no more of this build's lines");
  expect(events.filter((e) => String(e.output ?? "").includes("no more"))).toHaveLength(1);
  for (const e of events) expect(JSON.stringify(e).length).toBeLessThan(BuildOutput.LOG_MAX + 100);
  // Steps still shown before the bound: the first ones, whole up to the bound.
  expect(String(events[0]!.progress)).toMatch(/^Step 1\/5000 : RUN echo x+$/);
});
