/**
 * Best-of-N, one room: a group of candidates made from one prompt (`lazy run --profiles`, the
 * API's and dashboard's group), the [review] check run on them (groups.ts), and the comparison a
 * person reads in `lazy compare` and on the dashboard's Compare page (comparison.ts). The edges
 * are daemon/routes/compare.ts (the API) and cli/commands/compare.ts (the command); the page's
 * shell and script are the dashboard's (compare-page.ts, client/compare.ts).
 */

export {
  BASE_PASSES,
  type Candidate,
  type Comparison,
  compare,
  counts,
  rank,
  type Verdict,
  wallTime,
} from "./comparison";
export { CHECK_TIMEOUT_MS, type GroupLedger, Groups, MAX_CANDIDATES, type NewGroup } from "./groups";
