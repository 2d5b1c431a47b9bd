/**
 * lazy export: one task's evidence bundle, for a reviewer or an auditor who does not run lazy —
 * its diff, commits, Agent Trace records, audit rows, usage and cost, events, the person's
 * messages and review comments, and who accepted or rejected it — as one JSON document whose
 * manifest holds each part's sha256 (docs/export.md). The daemon gathers it (bundle.ts) and sends
 * it a slice at a time (document.ts); the CLI writes the file. Nothing secret is in it (redact.ts).
 */
export {
  BUDGET_MB,
  BUDGET_MB_MAX,
  type Bundle,
  bundle,
  type ExportDeps,
  type ExportOptions,
  FORMAT,
  type PartEntry,
  ranOn,
} from "./bundle";
export { streamed } from "./document";
export { Redactor } from "./redact";

/** The file's text: the document as the daemon made it, two-space indented, one newline at the end. */
export const serialize = (b: unknown): string => `${JSON.stringify(b, null, 2)}\n`;
