/**
 * [usage_pause]: whether a credential is too close to its limits to start a new turn on it.
 * Read from the latest usage-limit reading of that credential (the proxy keeps it): a
 * subscription window past its threshold, or a quota refusal, holds new turns until the reset.
 * Per-minute API-key buckets are rate limits, not windows, and never pause anything; a
 * credential with no reading is never paused.
 */
import type { Config } from "../config";
import type { LimitView } from "../proxy";

export interface Pause {
  credential: string;
  /** The window that is full (its lazy.toml name when it has one: 5h, 7d), or the refusal's. */
  window: string;
  usedPercent: number | null;
  threshold: number | null;
  /** ISO 8601: when the window resets and held turns start. */
  resetsAt: string;
  cause: "threshold" | "quota";
  detail: string;
}

type Settings = Config["usage_pause"];

/** The lazy.toml name of a subscription window (5h, 7d), or null for what is not one. */
export function windowKey(w: { name: string; windowMinutes?: number }): "5h" | "7d" | null {
  if (w.name === "five_hour") return "5h";
  if (w.name === "seven_day" || w.name === "seven_day_overage_included") return "7d";
  if (/^codex(_[a-z0-9_]+)?_(primary|secondary)$/.test(w.name)) {
    if (w.windowMinutes === 300) return "5h";
    if (w.windowMinutes === 10_080) return "7d";
    return w.name.endsWith("_primary") ? "5h" : "7d";
  }
  return null;
}

/** Is `credential` paused now? The first full window (or quota refusal) that has not reset. */
export function pauseOf(settings: Settings, views: readonly LimitView[], credential: string | null, now = Date.now()): Pause | null {
  if (!credential) return null;
  for (const v of views) {
    if (v.credential !== credential) continue;
    if (v.quota?.resetsAt && Date.parse(v.quota.resetsAt) > now)
      return {
        credential,
        window: v.quota.window ?? "quota",
        usedPercent: null,
        threshold: null,
        resetsAt: v.quota.resetsAt,
        cause: "quota",
        detail: v.quota.detail,
      };
    for (const w of v.windows) {
      const reset = w.resetsAt ? Date.parse(w.resetsAt) : Number.NaN;
      if (!(reset > now)) continue; // no reset named, or it has passed: the reading is stale
      if (w.name === "unified" && w.status === "rejected")
        return {
          credential,
          window: "unified",
          usedPercent: null,
          threshold: null,
          resetsAt: w.resetsAt!,
          cause: "quota",
          detail: "the provider refused the subscription (unified status rejected)",
        };
      const key = windowKey(w);
      const threshold = key ? (settings[key] ?? settings.threshold) : undefined;
      if (!key || threshold === undefined || w.usedPercent === null) continue;
      if (w.usedPercent >= threshold || w.status === "rejected")
        return {
          credential,
          window: key,
          usedPercent: w.usedPercent,
          threshold,
          resetsAt: w.resetsAt!,
          cause: "threshold",
          detail: `${key} window at ${Math.round(w.usedPercent)} % (threshold ${threshold} %)`,
        };
    }
  }
  return null;
}
