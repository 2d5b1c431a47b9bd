/**
 * Spending: every rule about what the agents may spend, in one room. The proxy's meters only
 * measure (readings, usage, quota, health); this room decides from what they measured:
 *   - pause.ts — [usage_pause]: is a credential too close to its limits to start a turn?
 *   - holds.ts — a turn a pause stops is held, and started by itself when the window resets;
 *   - budget.ts — [budget] and what was spent (tokens and dollars per task, profile, day);
 *   - budget-stops.ts — a task that reached its budget is stopped at the proxy and waits;
 *   - prices.ts — the price table that turns tokens into dollars.
 * The runner asks this room before a turn starts and after it ends; the daemon's routes, the
 * dashboard and the MCP tools read what was spent from here.
 */
export { pauseOf, windowKey, type Pause } from "./pause";
export { Holds, type HoldDeps } from "./holds";
export {
  overFor,
  dayOver,
  taskOver,
  report,
  spentByTask,
  spentOnDay,
  taskLimit,
  today,
  type Over,
  type Spent,
  type BudgetReport,
} from "./budget";
export { Budgets, type BudgetDeps } from "./budget-stops";
export { PRICES, priceOf, costOf, tokensOf } from "./prices";
