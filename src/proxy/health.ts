/**
 * Provider health over the last hour: requests, failures by kind, the latest failure. Kept
 * in memory (an hour is short, and a restart starting fresh is honest). lazy's own refusals
 * are not the provider's fault and are never counted here.
 */
export const FAILURE_KINDS = ["reset", "timeout", "connect", "5xx", "529", "429"] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

const HOUR = 3_600_000;

interface Event {
  at: number;
  failure: FailureKind | null;
  detail?: string;
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

export class Health {
  private events = new Map<string, Event[]>();

  record(provider: string, failure: FailureKind | null, detail?: string, at = Date.now()): void {
    let list = this.events.get(provider);
    if (!list) this.events.set(provider, (list = []));
    list.push({ at, failure, detail });
    if (list.length > 1000 && list[0]!.at < at - HOUR) this.prune(list, at);
  }

  private prune(list: Event[], now: number): void {
    let i = 0;
    while (i < list.length && list[i]!.at < now - HOUR) i++;
    list.splice(0, i);
  }

  summary(now = Date.now()): ProviderHealth[] {
    const out: ProviderHealth[] = [];
    for (const [provider, list] of this.events) {
      this.prune(list, now);
      if (!list.length) continue;
      const failures = Object.fromEntries(FAILURE_KINDS.map((k) => [k, 0])) as Record<FailureKind, number>;
      let latest: ProviderHealth["latest"] = null;
      for (const e of list)
        if (e.failure) {
          failures[e.failure]++;
          latest = { at: new Date(e.at).toISOString(), kind: e.failure, detail: e.detail ?? e.failure };
        }
      out.push({ provider, requests: list.length, failures, latest });
    }
    return out.sort((a, b) => a.provider.localeCompare(b.provider));
  }
}
