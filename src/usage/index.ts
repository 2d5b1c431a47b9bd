/**
 * Usage on the daemon's main thread: what the readings and the audit's counters mean for
 * starting turns ([usage_pause], [budget]) and for what the user sees (lazy stats limits,
 * lazy stats budget).
 */
export { pauseOf, windowKey, type Pause } from "./pause";
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
export { PRICES, priceOf, costOf, tokensOf } from "./prices";
