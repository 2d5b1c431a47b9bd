/**
 * A task's diff, one room: the task branch against the project's HEAD, and one candidate's
 * against another's (diff.ts: host-side hardened git in the project root, bounded, counts kept
 * per commit pair), and the branch counted as it moves, before anyone asks (ahead.ts). Read by
 * the API and dashboard, lazy diff and the CLI, the review and the comparison of candidates.
 */

export { candidatesDiff, type Diff, type DiffFile, FLAGS as DIFF_FLAGS, taskDiff } from "./diff";
