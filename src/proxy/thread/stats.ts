/**
 * The proxy threads' stats as one: each thread keeps its own usage-limit readings, provider
 * health and rejected OAuth tokens (entry.ts), and the main thread reads them all at once.
 */
import { FAILURE_KINDS, type LimitView, type ProviderHealth } from "../meters";
import type { Stats } from "./messages";

/** Each thread's stats as one: the latest reading per owner, health summed per provider. */
export function mergeStats(parts: Stats[]): Stats {
  if (parts.length === 1) return parts[0]!;
  const limits = new Map<string, LimitView>();
  for (const p of parts)
    for (const l of p.limits) if (!limits.has(l.owner) || Date.parse(l.at) > Date.parse(limits.get(l.owner)!.at)) limits.set(l.owner, l);
  const health = new Map<string, ProviderHealth>();
  for (const p of parts)
    for (const h of p.health) {
      const have = health.get(h.provider);
      if (!have) {
        health.set(h.provider, { ...h, failures: { ...h.failures } });
        continue;
      }
      have.requests += h.requests;
      for (const k of FAILURE_KINDS) have.failures[k] += h.failures[k];
      if (h.latest && (!have.latest || h.latest.at > have.latest.at)) have.latest = h.latest;
    }
  return {
    limits: [...limits.values()].sort((a, b) => a.owner.localeCompare(b.owner)),
    health: [...health.values()].sort((a, b) => a.provider.localeCompare(b.provider)),
    problems: Object.assign({}, ...parts.map((p) => p.problems)),
  };
}
