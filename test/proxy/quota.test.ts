/** The classifier of provider refusals (quota.ts) and the [usage_pause] rule (spending/pause.ts). */
import { describe, expect, test } from "bun:test";
import type { LimitView } from "../../src/proxy";
import { classify } from "../../src/proxy/meters/quota";
import { pauseOf } from "../../src/spending";

const NOW = Date.parse("2026-12-04T12:00:00Z");
const h = (o: Record<string, string>) => new Headers(o);

describe("quota or rate limit", () => {
  test("Anthropic: unified rejected with a reset is quota; rate_limit_error with retry-after: 1 is a rate limit", () => {
    const q = classify(
      429,
      h({
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": String(NOW / 1000 + 600),
        "anthropic-ratelimit-unified-representative-claim": "seven_day",
      }),
      undefined,
      NOW,
    );
    expect(q).toMatchObject({ kind: "quota", window: "seven_day", resetsAt: NOW + 600_000 });
    const r = classify(
      429,
      h({ "retry-after": "1" }),
      JSON.stringify({ type: "error", error: { type: "rate_limit_error", message: "x" } }),
      NOW,
    );
    expect(r).toMatchObject({ kind: "rate_limit", retryAfterS: 1 });
  });

  test("OpenAI: insufficient_quota is quota; rate_limit_exceeded is a rate limit", () => {
    expect(
      classify(429, h({}), JSON.stringify({ error: { type: "insufficient_quota", code: "insufficient_quota", message: "x" } }), NOW),
    ).toMatchObject({ kind: "quota", resetsAt: null });
    expect(
      classify(429, h({}), JSON.stringify({ error: { code: "rate_limit_exceeded", message: "try again in 1.5s" } }), NOW),
    ).toMatchObject({ kind: "rate_limit" });
  });

  test("Codex: a window at 100 % is quota; an hour-long retry-after is quota; a 200 is nothing", () => {
    expect(
      classify(429, h({ "x-codex-primary-used-percent": "100", "x-codex-primary-reset-at": String(NOW / 1000 + 60) }), undefined, NOW),
    ).toMatchObject({ kind: "quota", window: "codex_primary", resetsAt: NOW + 60_000 });
    expect(classify(429, h({ "retry-after": "3600" }), undefined, NOW)).toMatchObject({ kind: "quota", resetsAt: NOW + 3_600_000 });
    expect(classify(200, h({ "anthropic-ratelimit-unified-status": "rejected" }), undefined, NOW)).toBeNull();
  });
});

const view = (windows: LimitView["windows"], extra: Partial<LimitView> = {}): LimitView => ({
  owner: "credential:X",
  credential: "anthropic",
  upstream: "u",
  at: new Date(NOW).toISOString(),
  status: 200,
  headers: {},
  windows,
  quota: null,
  ...extra,
});
const soon = new Date(NOW + 60_000).toISOString();
const past = new Date(NOW - 1).toISOString();

describe("[usage_pause]", () => {
  test("a window past its threshold pauses until its reset; a per-window threshold overrides the common one", () => {
    const v = [view([{ name: "five_hour", usedPercent: 85, resetsAt: soon }])];
    expect(pauseOf({ threshold: 90 }, v, "anthropic", NOW)).toBeNull();
    expect(pauseOf({ threshold: 90, "5h": 80 }, v, "anthropic", NOW)).toMatchObject({
      window: "5h",
      usedPercent: 85,
      threshold: 80,
      resetsAt: soon,
      cause: "threshold",
    });
    expect(pauseOf({ threshold: 90, "5h": 80 }, v, "openai", NOW)).toBeNull(); // another credential
  });

  test("a reset that passed, a window with no reset, and API-key buckets never pause", () => {
    expect(pauseOf({ threshold: 50 }, [view([{ name: "five_hour", usedPercent: 99, resetsAt: past }])], "anthropic", NOW)).toBeNull();
    expect(pauseOf({ threshold: 50 }, [view([{ name: "seven_day", usedPercent: 99 }])], "anthropic", NOW)).toBeNull();
    expect(
      pauseOf(
        { threshold: 1 },
        [
          view([
            { name: "requests", usedPercent: 100, resetsAt: soon },
            { name: "tokens", usedPercent: 100, resetsAt: soon },
          ]),
        ],
        "anthropic",
        NOW,
      ),
    ).toBeNull();
    expect(pauseOf({}, [view([{ name: "five_hour", usedPercent: 100, resetsAt: soon }])], "anthropic", NOW)).toBeNull(); // no threshold set
  });

  test("a quota refusal pauses until its reset, with or without a threshold", () => {
    const q = view([], { quota: { at: new Date(NOW).toISOString(), window: "five_hour", resetsAt: soon, detail: "quota used up" } });
    expect(pauseOf({}, [q], "anthropic", NOW)).toMatchObject({ cause: "quota", resetsAt: soon });
    expect(pauseOf({}, [q], "anthropic", NOW + 120_000)).toBeNull();
  });
});
