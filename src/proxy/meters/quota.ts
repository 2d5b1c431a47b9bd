/**
 * One classifier of a provider's refusals: a quota refusal (the credential's window or
 * balance is used up, for hours) told apart from a short rate limit (seconds). The agent
 * still gets the provider's answer unchanged; provider health, the audit and [usage_pause]
 * act on the verdict (docs/wire.md, "Usage-limit headers": unified-status, rate_limit_error, insufficient_quota).
 */
export type Refusal =
  | { kind: "quota"; window: string | null; resetsAt: number | null; detail: string }
  | { kind: "rate_limit"; retryAfterS: number | null; detail: string };

/** A retry-after this long or longer is a used-up window, not a short limit. */
const QUOTA_AFTER_S = 15 * 60;

/**
 * `headers`: the response's (or the kept usage-limit headers); `body`: the error body when it
 * was read (small JSON), else undefined. Null when the answer is not a refusal.
 */
export function classify(status: number, headers: { get(name: string): string | null }, body?: string, now = Date.now()): Refusal | null {
  if (status !== 429 && status !== 403 && status !== 402) return null;
  const h = (n: string) => headers.get(n) ?? undefined;
  const retryAfterS = retryAfter(h("retry-after-ms"), h("retry-after"), now);

  // Claude subscriptions: the unified verdict, its binding window and reset (epoch seconds).
  if (h("anthropic-ratelimit-unified-status") === "rejected" || (status === 429 && rejectedWindow(h))) {
    const window = h("anthropic-ratelimit-unified-representative-claim") ?? rejectedWindow(h) ?? null;
    const reset =
      epoch(h("anthropic-ratelimit-unified-reset")) ??
      (window ? epoch(h(`anthropic-ratelimit-unified-${ABBR[window] ?? window}-reset`)) : null);
    return {
      kind: "quota",
      window,
      resetsAt: reset,
      detail: `quota used up${window ? ` (${window} window)` : ""}${reset ? `, resets ${new Date(reset).toISOString()}` : ""}`,
    };
  }
  // Codex (ChatGPT plans): a window at 100 % with a 429.
  for (const slot of ["primary", "secondary"]) {
    const used = Number(h(`x-codex-${slot}-used-percent`));
    if (status === 429 && Number.isFinite(used) && used >= 100) {
      const reset = epoch(h(`x-codex-${slot}-reset-at`));
      return {
        kind: "quota",
        window: `codex_${slot}`,
        resetsAt: reset,
        detail: `quota used up (codex_${slot} window)${reset ? `, resets ${new Date(reset).toISOString()}` : ""}`,
      };
    }
  }
  const code = errorCode(body);
  if (code === "insufficient_quota" || code === "usage_not_included" || code === "billing_error")
    return {
      kind: "quota",
      window: null,
      resetsAt: retryAfterS !== null ? now + retryAfterS * 1000 : null,
      detail: `quota used up (${code})`,
    };
  if (status !== 429) return null;
  if (retryAfterS !== null && retryAfterS >= QUOTA_AFTER_S)
    return {
      kind: "quota",
      window: null,
      resetsAt: now + retryAfterS * 1000,
      detail: `quota used up (retry after ${Math.round(retryAfterS)} s)`,
    };
  return {
    kind: "rate_limit",
    retryAfterS,
    detail: `rate limited${code ? ` (${code})` : ""}${retryAfterS !== null ? `, retry after ${retryAfterS} s` : ""}`,
  };
}

const ABBR: Record<string, string> = { five_hour: "5h", seven_day: "7d", seven_day_overage_included: "7d_oi" };

function rejectedWindow(h: (n: string) => string | undefined): string | undefined {
  for (const [name, abbr] of Object.entries(ABBR)) if (h(`anthropic-ratelimit-unified-${abbr}-status`) === "rejected") return name;
  return undefined;
}

/** Unix epoch seconds (as the providers send) or an ISO time → ms. */
function epoch(v: string | undefined): number | null {
  if (v === undefined || v.trim() === "") return null;
  const n = Number(v);
  if (Number.isFinite(n)) return n > 0 && n < 1e11 ? n * 1000 : null;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : null;
}

function retryAfter(ms: string | undefined, s: string | undefined, now: number): number | null {
  const m = Number(ms);
  if (ms !== undefined && Number.isFinite(m) && m >= 0) return m / 1000;
  if (s === undefined) return null;
  const n = Number(s);
  if (Number.isFinite(n) && n >= 0) return n;
  const t = Date.parse(s);
  return Number.isFinite(t) ? Math.max(0, (t - now) / 1000) : null;
}

/** The provider's error code from a JSON error body: Anthropic `error.type`, OpenAI `error.code`/`type`. */
function errorCode(body: string | undefined): string | null {
  if (!body) return null;
  try {
    const e = (JSON.parse(body) as { error?: { type?: unknown; code?: unknown } }).error;
    const c = e?.code ?? e?.type;
    return typeof c === "string" ? c : null;
  } catch {
    return null;
  }
}
