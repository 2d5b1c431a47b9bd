/** A turn's facts as the trace records take them (src/provenance), made up for a test: one model call, no tool call. */
import type * as Provenance from "../../src/provenance";

export const turnFacts = (over: Partial<Provenance.TurnFacts> = {}): Provenance.TurnFacts => ({
  task: { id: "abcd1234", code: "t", title: "A task" },
  turn: 1,
  harness: "claude",
  profile: "claude",
  wire: "anthropic",
  tools: [],
  calls: [{ id: 7, at: 1, served: "claude-sonnet-4-5", asked: "claude-sonnet-4-5" }],
  asked: { kind: "task", text: "Do it" },
  prompts: true,
  cut: { secrets: [] },
  ...over,
});
