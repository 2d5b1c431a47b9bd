import { describe, expect, test } from "bun:test";
import * as Readings from "../../src/proxy/meters/readings";

// docs/wire.md, "Usage-limit headers" (Anthropic API keys): a real API-key response (tidyllm fixture, Aug 2025) plus the headers around it.
const apiKeyResponse = new Headers({
  "content-type": "application/json",
  "anthropic-ratelimit-input-tokens-limit": "80000",
  "anthropic-ratelimit-input-tokens-remaining": "80000",
  "anthropic-ratelimit-input-tokens-reset": "2025-08-21T12:40:59Z",
  "anthropic-ratelimit-output-tokens-limit": "16000",
  "anthropic-ratelimit-output-tokens-remaining": "12000",
  "anthropic-ratelimit-output-tokens-reset": "2025-08-21T12:40:59Z",
  "anthropic-ratelimit-requests-limit": "1000",
  "anthropic-ratelimit-requests-remaining": "999",
  "anthropic-ratelimit-requests-reset": "2025-08-21T12:40:59Z",
  "anthropic-ratelimit-tokens-limit": "96000",
  "anthropic-ratelimit-tokens-remaining": "96000",
  "anthropic-ratelimit-tokens-reset": "2025-08-21T12:40:59Z",
  "request-id": "req_011CSLsW7mFqvHHnzrKdKjAE",
  "anthropic-organization-id": "5e7a7c2e-3f0b-4a53-9a56-2f1a0c1d2e3f",
  "set-cookie": "__cf_bm=abc; path=/; HttpOnly",
  "cf-ray": "97a1b2c3d4e5f6a7-AMS",
  via: "1.1 google",
});

// docs/wire.md, "Usage-limit headers" (Claude subscriptions): a Claude subscription (OAuth) response.
const subscriptionResponse = new Headers({
  "anthropic-ratelimit-unified-status": "allowed_warning",
  "anthropic-ratelimit-unified-reset": "1796220082",
  "anthropic-ratelimit-unified-representative-claim": "five_hour",
  "anthropic-ratelimit-unified-fallback": "available",
  "anthropic-ratelimit-unified-5h-utilization": "0.42",
  "anthropic-ratelimit-unified-5h-reset": "1796220082",
  "anthropic-ratelimit-unified-5h-status": "allowed",
  "anthropic-ratelimit-unified-7d-utilization": "0.30",
  "anthropic-ratelimit-unified-7d-reset": "1796738482",
  "anthropic-ratelimit-unified-7d-surpassed-threshold": "0.25",
  "anthropic-ratelimit-unified-overage-status": "rejected",
  "anthropic-ratelimit-unified-overage-disabled-reason": "org_level_disabled_until",
  "anthropic-ratelimit-unified-upgrade-paths": "claude_max_5x,claude_max_20x",
  "request-id": "req_011CSLsW7mFqvHHnzrKdKjAE",
});

// docs/wire.md, "Usage-limit headers" (OpenAI): an OpenAI API-key response.
const openaiResponse = new Headers({
  "x-ratelimit-limit-requests": "5000",
  "x-ratelimit-limit-tokens": "160000",
  "x-ratelimit-remaining-requests": "4999",
  "x-ratelimit-remaining-tokens": "159976",
  "x-ratelimit-reset-requests": "12ms",
  "x-ratelimit-reset-tokens": "6m0s",
  "openai-organization": "user-abc123",
  "openai-processing-ms": "412",
  "x-request-id": "req_7f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c",
});

// docs/wire.md, "Usage-limit headers" (Codex): a Codex (ChatGPT plan) response.
const codexResponse = new Headers({
  "x-codex-primary-used-percent": "12.5",
  "x-codex-primary-window-minutes": "300",
  "x-codex-primary-reset-at": "1796220082",
  "x-codex-secondary-used-percent": "40",
  "x-codex-secondary-window-minutes": "10080",
  "x-codex-secondary-reset-at": "1796738482",
  "x-codex-bengalfox-primary-used-percent": "3",
  "x-codex-bengalfox-limit-name": "gpt-5.2-codex-sonic",
  "x-codex-credits-has-credits": "true",
  "x-codex-credits-balance": "12.50",
  "x-codex-window-id": "0f2c7a1e-8b9d-4c3e-a1f2-3b4c5d6e7f80:0",
});

describe("filter", () => {
  test("keeps the allowlisted names and drops everything else", () => {
    const kept = Readings.filter(apiKeyResponse);
    expect(Object.keys(kept).sort()).toEqual([...apiKeyResponse.keys()].filter((k) => k.startsWith("anthropic-ratelimit-")).sort());
    for (const dropped of ["request-id", "anthropic-organization-id", "set-cookie", "cf-ray", "via", "content-type"]) {
      expect(kept[dropped]).toBeUndefined();
    }
    expect(Object.keys(Readings.filter(openaiResponse)).sort()).toEqual([
      "x-ratelimit-limit-requests",
      "x-ratelimit-limit-tokens",
      "x-ratelimit-remaining-requests",
      "x-ratelimit-remaining-tokens",
      "x-ratelimit-reset-requests",
      "x-ratelimit-reset-tokens",
    ]);
  });

  test("keeps retry-after, retry-after-ms, priority and fast families", () => {
    const kept = Readings.filter(
      new Headers({
        "retry-after": "30",
        "retry-after-ms": "1500.5",
        "anthropic-priority-input-tokens-limit": "100000",
        "anthropic-fast-output-tokens-remaining": "5",
        "x-should-retry": "true",
        "retry-after-foo": "1",
      }),
    );
    expect(kept).toEqual({
      "retry-after": "30",
      "retry-after-ms": "1500.5",
      "anthropic-priority-input-tokens-limit": "100000",
      "anthropic-fast-output-tokens-remaining": "5",
    });
  });

  test("keeps ordinary values", () => {
    const ordinary = [
      "0.42",
      "2025-08-21T12:40:59Z",
      "1796220082",
      "12ms",
      "6m0s",
      "allowed_warning",
      "five_hour",
      "gpt-5.2-codex-sonic",
      "org_level_disabled_until",
      "claude_max_5x,claude_max_20x",
      "seven_day_overage_included",
      "Wed, 21 Oct 2026 07:28:00 GMT",
      "You have 3 days of Pro left - ask us about the risk-free trial",
    ];
    const headers = new Headers(ordinary.map((v, i) => [`x-codex-test-${i}`, v]));
    expect(Object.values(Readings.filter(headers)).sort()).toEqual([...ordinary].sort());
  });

  test("drops credential-looking values even under an allowed name", () => {
    const secrets = [
      "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
      "sk-proj-Ab12Cd34Ef56",
      "sk-or-v1-0123456789abcdef",
      "Bearer abc.def.ghi",
      "bearer sometoken",
      "Basic dXNlcjpwYXNz",
      "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
      "key_0123456789abcdef0123456789abcdef0123456789abcdef",
      "0123456789abcdef0123456789abcdef",
      "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
      "token=Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA==",
      "5e7a7c2e-3f0b-4a53-9a56-2f1a0c1d2e3f",
      "x".repeat(300),
    ];
    const headers = new Headers(secrets.map((v, i) => [`anthropic-ratelimit-test-${i}`, v]));
    expect(Readings.filter(headers)).toEqual({});
  });
});

describe("windows", () => {
  const now = Date.parse("2026-12-02T10:00:00Z");

  test("no headers → no reading (never 0 %)", () => {
    expect(Readings.windows({}, now)).toEqual([]);
    expect(Readings.windows(Readings.filter(new Headers({ "content-type": "text/event-stream" })), now)).toEqual([]);
  });

  test("Claude subscription: fractions become percents, epoch resets become ISO", () => {
    expect(Readings.windows(Readings.filter(subscriptionResponse), now)).toEqual([
      { name: "unified", usedPercent: null, status: "allowed_warning", resetsAt: "2026-12-02T14:01:22.000Z" },
      { name: "five_hour", usedPercent: 42, status: "allowed", resetsAt: "2026-12-02T14:01:22.000Z" },
      { name: "seven_day", usedPercent: 30, resetsAt: "2026-12-08T14:01:22.000Z" },
      { name: "overage", usedPercent: null, status: "rejected" },
    ]);
  });

  test("Claude subscription: a rejected window past 100 % stays honest", () => {
    const w = Readings.windows({
      "anthropic-ratelimit-unified-7d_oi-utilization": "1.07",
      "anthropic-ratelimit-unified-7d_oi-status": "rejected",
    });
    expect(w).toEqual([{ name: "seven_day_overage_included", usedPercent: 107, status: "rejected" }]);
  });

  test("Anthropic API key buckets: used = (limit − remaining) / limit", () => {
    expect(Readings.windows(Readings.filter(apiKeyResponse), now)).toEqual([
      { name: "requests", usedPercent: 0.1, resetsAt: "2025-08-21T12:40:59.000Z" },
      { name: "tokens", usedPercent: 0, resetsAt: "2025-08-21T12:40:59.000Z" },
      { name: "input_tokens", usedPercent: 0, resetsAt: "2025-08-21T12:40:59.000Z" },
      { name: "output_tokens", usedPercent: 25, resetsAt: "2025-08-21T12:40:59.000Z" },
    ]);
  });

  test("Priority Tier buckets are named apart", () => {
    expect(
      Readings.windows({
        "anthropic-priority-output-tokens-limit": "200",
        "anthropic-priority-output-tokens-remaining": "50",
      }),
    ).toEqual([{ name: "priority_output_tokens", usedPercent: 75 }]);
  });

  test("OpenAI buckets: Go-duration resets are relative to now", () => {
    expect(Readings.windows(Readings.filter(openaiResponse), now)).toEqual([
      { name: "requests", usedPercent: 0.02, resetsAt: "2026-12-02T10:00:00.012Z" },
      { name: "tokens", usedPercent: 0.02, resetsAt: "2026-12-02T10:06:00.000Z" },
    ]);
  });

  test("Codex windows are already percent, with their length", () => {
    expect(Readings.windows(Readings.filter(codexResponse), now)).toEqual([
      { name: "codex_primary", usedPercent: 12.5, resetsAt: "2026-12-02T14:01:22.000Z", windowMinutes: 300 },
      { name: "codex_secondary", usedPercent: 40, resetsAt: "2026-12-08T14:01:22.000Z", windowMinutes: 10080 },
      { name: "codex_bengalfox_primary", usedPercent: 3 },
    ]);
  });

  test("unparseable values become null or are left out, never guessed", () => {
    expect(
      Readings.windows({
        "anthropic-ratelimit-unified-5h-utilization": "lots",
        "anthropic-ratelimit-unified-5h-reset": "soon",
        "x-ratelimit-limit-requests": "0",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6 minutes",
      }),
    ).toEqual([
      { name: "five_hour", usedPercent: null },
      { name: "requests", usedPercent: null },
    ]);
  });

  test("a reset given as ISO instead of epoch seconds is accepted", () => {
    expect(Readings.windows({ "anthropic-ratelimit-unified-5h-reset": "2026-12-02T15:00:00Z" })).toEqual([
      { name: "five_hour", usedPercent: null, resetsAt: "2026-12-02T15:00:00.000Z" },
    ]);
  });

  test("Go durations", () => {
    expect(Readings.goDuration("12ms")).toBe(12);
    expect(Readings.goDuration("1s")).toBe(1000);
    expect(Readings.goDuration("6m0s")).toBe(360_000);
    expect(Readings.goDuration("1h2m3.5s")).toBe(3_723_500);
    expect(Readings.goDuration("1.5")).toBe(1500);
    expect(Readings.goDuration("250us")).toBeCloseTo(0.25);
    expect(Readings.goDuration("6 minutes")).toBeNull();
    expect(Readings.goDuration("")).toBeNull();
    expect(Readings.goDuration("-1s")).toBeNull();
  });
});
