/**
 * Provider health over the last hour: requests, failures by kind, the latest failure. Kept
 * in memory (an hour is short, and a restart starting fresh is honest). lazy's own refusals
 * are not the provider's fault and are never counted here. "429" is a short rate limit;
 * "quota" a refusal because the credential's window or balance is used up (quota.ts). The kinds
 * are the config's list (a fallback's `on` names the same ones).
 */
import { FAILURE_KINDS } from "../../config";

export { FAILURE_KINDS };
export type FailureKind = (typeof FAILURE_KINDS)[number];

const HOUR = 3_600_000;

interface Bucket {
  minute: number;
  requests: number;
  failures: Record<FailureKind, number>;
}

export interface ProviderHealth {
  provider: string;
  requests: number;
  failures: Record<FailureKind, number>;
  latest: { at: string; kind: FailureKind; detail: string } | null;
}

export function kindOfStatus(status: number): FailureKind | null {
  if (status === 529) return "529";
  if (status === 429) return "429";
  if (status >= 500) return "5xx";
  return null;
}

const zero = () => Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;

/** Per provider, one bucket a minute: memory stays flat however many requests pass. */
export class Health {
  private providers = new Map<string, { buckets: Bucket[]; latest: ProviderHealth["latest"] }>();

  record(provider: string, failure: FailureKind | null, detail?: string, at = Date.now()): void {
    let p = this.providers.get(provider);
    if (!p) {
      p = { buckets: [], latest: null };
      this.providers.set(provider, p);
    }
    const minute = Math.floor(at / 60_000);
    let b = p.buckets.at(-1);
    if (!b || b.minute !== minute) {
      b = { minute, requests: 0, failures: zero() };
      p.buckets.push(b);
      while (p.buckets.length && p.buckets[0]!.minute <= minute - 60) p.buckets.shift();
    }
    b.requests++;
    if (failure) {
      b.failures[failure]++;
      p.latest = { at: new Date(at).toISOString(), kind: failure, detail: detail ?? failure };
    }
  }

  summary(now = Date.now()): ProviderHealth[] {
    const out: ProviderHealth[] = [];
    const from = Math.floor(now / 60_000) - 59;
    for (const [provider, p] of this.providers) {
      const live = p.buckets.filter((b) => b.minute >= from);
      if (!live.length) continue;
      const failures = zero();
      let requests = 0;
      for (const b of live) {
        requests += b.requests;
        for (const k of FAILURE_KINDS) failures[k] += b.failures[k];
      }
      const latest = p.latest && Date.parse(p.latest.at) >= HOUR_AGO(now) ? p.latest : null;
      out.push({ provider, requests, failures, latest });
    }
    return out.sort((a, b) => a.provider.localeCompare(b.provider));
  }
}

const HOUR_AGO = (now: number) => now - HOUR;
