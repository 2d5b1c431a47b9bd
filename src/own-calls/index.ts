/**
 * lazy's own model calls and every prompt lazy sends: one prompt, one answer, in a throwaway
 * container launched the way an agent turn is (calls.ts; how it ends, outcome.ts); the prompts
 * (prompts.ts); project memory, handed to new tasks and compacted by a call (memory.ts).
 */
export { OwnCalls, SPARE_IDLE_MS, type Answer, type OwnCallDeps, type RemoteCalls } from "./calls";
export { Compactor, withMemory, AGENT_COMPACT_EVERY_MS } from "./memory";
export { summaryPrompt, askPrompt, reportPrompt } from "./prompts";
