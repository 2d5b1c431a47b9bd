/**
 * lazy's own model calls and every prompt lazy sends: one prompt, one answer, in a throwaway
 * container launched the way an agent turn is (calls.ts; what it needs and answers, deps.ts;
 * how it ends, outcome.ts); the prompts (prompts.ts); project memory, handed to new tasks and
 * compacted by a call (memory.ts).
 */
export { OwnCalls, SPARE_IDLE_MS } from "./calls";
export type { Answer, OwnCallDeps, RemoteCalls } from "./deps";
export { AGENT_COMPACT_EVERY_MS, Compactor, withMemory } from "./memory";
export { askPrompt, reportPrompt, summaryPrompt } from "./prompts";
