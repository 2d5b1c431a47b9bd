/**
 * What the proxy measures and keeps of each answer: usage-limit readings (readings.ts) and the
 * latest per credential (limits.ts), a provider's refusal told quota from rate limit (quota.ts),
 * tokens read from the answer (usage.ts), provider health (health.ts), and the causes of lazy's
 * own refusals read back from the audit (refusals.ts). Meters only measure: what a reading or
 * a count means for the next turn (a pause, a hold, a budget) is decided in src/spending/.
 */

export * from "./health";
export * from "./limits";
export * from "./quota";
export * from "./readings";
export * from "./refusals";
export * from "./usage";
