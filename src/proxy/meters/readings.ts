/**
 * Usage-limit readings: the response headers in which a provider says how close a credential
 * is to its limits (docs: "Usage-limit readings"; docs/wire.md, "Usage-limit headers").
 *
 * `filter` decides what may be recorded at all — a fixed allowlist of names, and never a value
 * that looks like a credential even under an allowed name, because whatever it keeps is written
 * to the audit trail and shown by `lazy stats limits --json`. `windows` turns the kept headers
 * into per-window percentages for display and for [usage_pause].
 */
import { z } from "zod";

export const Window = z
  .object({
    name: z
      .string()
      .describe(
        "five_hour, seven_day, seven_day_overage_included, overage, unified (Claude subscription); " +
          "requests, tokens, input_tokens, output_tokens, priority_* (API-key buckets); codex_primary, codex_secondary",
      ),
    usedPercent: z.number().nullable().describe("0–100 (may pass 100 once surpassed); null when the headers give no fill level"),
    status: z.string().optional().describe("the provider's own word, e.g. allowed, allowed_warning, rejected"),
    resetsAt: z.string().optional().describe("ISO 8601 instant at which the window resets"),
    windowMinutes: z.number().optional().describe("window length, when the provider states it (Codex)"),
  })
  .describe("One usage-limit window of one credential, as read from a response's headers");
export type Window = z.infer<typeof Window>;

const KEPT_NAME = /^(?:anthropic-ratelimit-|anthropic-priority-|anthropic-fast-|x-ratelimit-|x-codex-)[a-z0-9_.-]+$|^retry-after(?:-ms)?$/;

/** Keep only the allowlisted usage-limit headers, minus any value that looks like a secret. */
export function filter(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  const all = headers.toJSON() as Record<string, string | string[]>; // cheaper than iterating (Bun)
  for (const name in all) {
    const value = all[name]!;
    if (typeof value !== "string" || !kept(name)) continue;
    const v = value.trim();
    // Every answer repeats most readings: a value kept under this name last time is not checked again.
    if (lastKept.get(name) !== v) {
      if (looksLikeCredential(v)) continue;
      remember(lastKept, name, v);
    }
    out[name] = v;
  }
  return out;
}

/** Per header name: whether it is allowlisted, and the value last kept under it (both bounded). */
const keptName = new Map<string, boolean>();
const lastKept = new Map<string, string>();
const REMEMBERED = 256;

function kept(name: string): boolean {
  let k = keptName.get(name);
  if (k === undefined) {
    k = KEPT_NAME.test(name);
    remember(keptName, name, k);
  }
  return k;
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= REMEMBERED) map.clear();
  map.set(key, value);
}

/**
 * A reading is a number, a date, a duration or a short word. Anything shaped like a key, a
 * bearer value, a JWT or a long random token is dropped: better to lose one odd header than
 * to write someone's credential into the audit trail.
 */
export function looksLikeCredential(value: string): boolean {
  if (value.length > 256) return true;
  if (/\bsk[-_][A-Za-z0-9]/.test(value)) return true;
  if (/\b(?:bearer|basic)\s+\S/i.test(value)) return true;
  if (/eyJ[A-Za-z0-9_-]{8,}/.test(value)) return true;
  for (const run of value.match(/[A-Za-z0-9+/=_-]{32,}/g) ?? []) {
    // Two or more character classes in a 32+ run is a token; a long snake_case word is one class.
    const classes = Number(/[a-z]/.test(run)) + Number(/[A-Z]/.test(run)) + Number(/[0-9]/.test(run));
    if (classes >= 2) return true;
  }
  return false;
}

const UNIFIED: ReadonlyArray<[string, string]> = [
  ["5h", "five_hour"],
  ["7d", "seven_day"],
  ["7d_oi", "seven_day_overage_included"],
  ["overage", "overage"],
];
const ANTHROPIC_BUCKETS = ["requests", "tokens", "input-tokens", "output-tokens"];

/**
 * Interpret kept headers as windows. `now` anchors OpenAI's relative resets (`6m0s`). No
 * usage-limit headers gives an empty list: the caller shows "no reading", never 0 %.
 */
export function windows(raw: Record<string, string>, now: number = Date.now()): Window[] {
  const out: Window[] = [];
  const get = (name: string): string | undefined => raw[name];

  // Claude subscription: the overall verdict, then each window's fraction (0–1) and epoch reset.
  const u = "anthropic-ratelimit-unified-";
  if (get(`${u}status`) !== undefined || get(`${u}reset`) !== undefined) {
    out.push(window("unified", null, get(`${u}status`), epochOrIso(get(`${u}reset`))));
  }
  for (const [abbr, name] of UNIFIED) {
    const util = get(`${u}${abbr}-utilization`);
    const reset = get(`${u}${abbr}-reset`);
    const status = get(`${u}${abbr}-status`);
    if (util === undefined && reset === undefined && status === undefined) continue;
    const fraction = num(util);
    out.push(window(name, fraction === null ? null : round(fraction * 100), status, epochOrIso(reset)));
  }

  // Anthropic API-key buckets (per minute), standard and Priority Tier.
  for (const [prefix, label] of [
    ["anthropic-ratelimit-", ""],
    ["anthropic-priority-", "priority_"],
  ] as const) {
    for (const bucket of ANTHROPIC_BUCKETS) {
      const limit = get(`${prefix}${bucket}-limit`);
      const remaining = get(`${prefix}${bucket}-remaining`);
      const reset = get(`${prefix}${bucket}-reset`);
      if (limit === undefined && remaining === undefined && reset === undefined) continue;
      out.push(window(`${label}${bucket.replace("-", "_")}`, usedOf(limit, remaining), undefined, iso(reset)));
    }
  }

  // OpenAI API-key buckets: x-ratelimit-{limit,remaining,reset}-<bucket>, reset a Go duration.
  const openai = new Set<string>();
  for (const name of Object.keys(raw)) {
    const m = /^x-ratelimit-(?:limit|remaining|reset)-(.+)$/.exec(name);
    if (m?.[1]) openai.add(m[1]);
  }
  for (const bucket of [...openai].sort(byKnownFirst(["requests", "tokens"]))) {
    const ms = goDuration(get(`x-ratelimit-reset-${bucket}`));
    const resetsAt = ms === null ? undefined : new Date(now + ms).toISOString();
    out.push(window(bucket, usedOf(get(`x-ratelimit-limit-${bucket}`), get(`x-ratelimit-remaining-${bucket}`)), undefined, resetsAt));
  }

  // Codex (ChatGPT plans): x-<family>-{primary,secondary}-{used-percent,window-minutes,reset-at}.
  const codex = new Set<string>();
  for (const name of Object.keys(raw)) {
    const m = /^x-(codex(?:-[a-z0-9_]+)*?)-(primary|secondary)-(?:used-percent|window-minutes|reset-at)$/.exec(name);
    if (m?.[1] && m[2]) codex.add(`${m[1]}\u0000${m[2]}`);
  }
  for (const key of [...codex].sort()) {
    const [family, slot] = key.split("\u0000") as [string, string];
    const p = `x-${family}-${slot}-`;
    const used = num(get(`${p}used-percent`));
    const w = window(
      `${family.replaceAll("-", "_")}_${slot}`,
      used === null ? null : round(used),
      undefined,
      epochOrIso(get(`${p}reset-at`)),
    );
    const minutes = num(get(`${p}window-minutes`));
    if (minutes !== null) w.windowMinutes = minutes;
    out.push(w);
  }

  return out;
}

function window(name: string, usedPercent: number | null, status: string | undefined, resetsAt: string | undefined): Window {
  const w: Window = { name, usedPercent };
  if (status !== undefined) w.status = status;
  if (resetsAt !== undefined) w.resetsAt = resetsAt;
  return w;
}

function usedOf(limit: string | undefined, remaining: string | undefined): number | null {
  const l = num(limit);
  const r = num(remaining);
  if (l === null || r === null || l <= 0) return null;
  return round(((l - r) / l) * 100);
}

function num(value: string | undefined): number | null {
  if (value === undefined || value.trim() === "") return null;
  const n = Number(value);
  return Number.isFinite(n) ? n : null;
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** RFC 3339 → ISO; anything unparseable is left out rather than guessed. */
function iso(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const t = Date.parse(value);
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}

/** Unix epoch seconds, as Claude Code and Codex parse them; an ISO string is accepted too (docs/wire.md, "Usage-limit headers": one report shows ISO strings). */
function epochOrIso(value: string | undefined): string | undefined {
  const n = num(value);
  if (n !== null) return n > 0 && n < 1e11 ? new Date(n * 1000).toISOString() : undefined;
  return iso(value);
}

const GO_UNITS: Record<string, number> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ns: 1e-6,
};

/** A Go duration (`6m0s`, `12ms`, `1h2m3.5s`) in milliseconds; a bare number is seconds. */
export function goDuration(value: string | undefined): number | null {
  if (value === undefined) return null;
  const s = value.trim();
  if (s === "") return null;
  const bare = num(s);
  if (bare !== null) return bare >= 0 ? bare * 1000 : null;
  const part = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;
  let ms = 0;
  let i = 0;
  while (i < s.length) {
    part.lastIndex = i;
    const m = part.exec(s);
    if (!m?.[1] || !m[2]) return null;
    ms += Number(m[1]) * (GO_UNITS[m[2]] ?? Number.NaN);
    i = part.lastIndex;
  }
  return Number.isFinite(ms) ? ms : null;
}

function byKnownFirst(known: string[]) {
  const rank = (s: string) => {
    const i = known.indexOf(s);
    return i === -1 ? known.length : i;
  };
  return (a: string, b: string) => rank(a) - rank(b) || a.localeCompare(b);
}
