/**
 * Usage on the daemon's main thread: what the readings and the audit's counters mean for
 * starting turns ([usage_pause]) and for what the user sees (lazy stats limits, budget).
 */
export { pauseOf, windowKey, type Pause } from "./pause";
