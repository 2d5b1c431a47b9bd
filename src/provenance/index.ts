/**
 * Provenance: where each agent commit came from, as an Agent Trace record
 * (https://github.com/cursor/agent-trace) in a git note under refs/notes/agent-trace of the
 * project. The runner writes a turn's records when the turn's commits land on lazy/<task>
 * (`writeTurn`, from the facts it gathers: the turn's tool calls, its audit rows, what asked for
 * it; bounded, off the daemon's thread's way, one notes commit per turn), and drops those of a
 * rejected task's commits no other ref holds (`branchOnly`, `dropNotes`); `lazy trace FILE:LINE`
 * reads them back (`trace`). For anything else that reads records
 * (lazy export), `readRecord(root, commit)` is the one reader: the parsed record of a full
 * commit id, or null when it has none — `git notes --ref agent-trace show <commit>` by hand —
 * read through git's one note reader (src/git `notesOn`: bounded, never blocking the daemon).
 *
 * Records hold no secret (inert.ts): the task's placeholders and MCP token, anything shaped like
 * one, and URL query strings are cut from every string; tool inputs are the ones lazy logs shows.
 */
export type { AddedRange, ChangedFile } from "./diff";
export { added, addedByMerge } from "./diff";
export { type Cut, cutQueries, inert, SECRET } from "./inert";
export { dropNotes, MAX_NOTE, NOTES_REF, readRecord, writeNotes } from "./notes";
export {
  auditUri,
  type Contributor,
  type Conversation,
  fitNote,
  indexTurn,
  type LazyFields,
  type ModelCall,
  type Range,
  recordOf,
  SPEC_VERSION,
  type ToolCall,
  type TraceRecord,
  type TurnFacts,
  type TurnIndex,
  toolUri,
  turnUri,
  VENDOR,
} from "./record";
export { HOVER_MS, parseSpot, TRACE_MS, type Traced, trace, traceAt } from "./trace";
export { branchOnly, LIMITS, MAX_COMMITS, newCommits, TURN_BYTES, TURN_MS, type WriteLimits, type Written, writeTurn } from "./write";
