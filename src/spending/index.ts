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

export { costOf, type Own, ownPrices, PRICES, type Price, priceOf, priceText, tokensOf } from "../prices";
export {
  type BudgetReport,
  dayOver,
  modelsOfTask,
  type Over,
  overFor,
  report,
  type Spent,
  spentByTask,
  spentOnDay,
  stampLegacy,
  taskLimit,
  taskOver,
  today,
} from "./budget";
export { type BudgetDeps, Budgets } from "./budget-stops";
export { type HoldDeps, Holds } from "./holds";
export { type Pause, pauseOf, windowKey } from "./pause";
