/**
 * [usage_pause]: a credential past its threshold, or refused for quota, starts no new turn;
 * the task waits with the reason and the reset, lazy stats limits says PAUSED, and the turn
 * runs by itself once the window resets. A short rate limit pauses nothing. Real Docker, real
 * Claude Code, the mock provider's usage-limit headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { containerProject, dockerAnthropic, oneRequest } from "../helpers/fixtures";
import { cleanupAll, type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-PAUSE-" + "q".repeat(76) + "AA";
let anthropic: Mock.MockProvider;

beforeAll(async () => {
  anthropic = await dockerAnthropic();
});
afterAll(() => cleanupAll(anthropic));

const project = (extra = ""): Promise<Project> =>
  containerProject(anthropic, KEY, { firstCommit: "empty", extra: `\n[usage_pause]\nthreshold = 90\n${extra}` });

/** One request through `p`'s proxy answered 429 rate_limit_error (`message`, `headers`): then lazy stats limits and its Anthropic health. */
async function after429(p: Project, message: string, headers: Record<string, string>) {
  anthropic.reset();
  anthropic.behavior = { kind: "status", status: 429, body: { type: "error", error: { type: "rate_limit_error", message } }, headers };
  expect(await oneRequest(p)).toBe(429);
  anthropic.reset();
  const limits = await p.json<any>(["stats", "limits"]);
  return { limits, health: limits.health.find((h: any) => h.provider === "Anthropic") };
}

const inSeconds = (s: number) => String(Math.ceil(Date.now() / 1000) + s);

describe("[usage_pause]", () => {
  test("a 5-hour window at 95 % holds lazy start; PAUSED in stats limits; after the reset the turn runs by itself", async () => {
    const p = await project();
    anthropic.answer({ text: "Ran after the reset." });
    anthropic.rateLimitHeaders = {
      "anthropic-ratelimit-unified-status": "allowed_warning",
      "anthropic-ratelimit-unified-5h-utilization": "0.95",
      "anthropic-ratelimit-unified-5h-reset": inSeconds(4),
      "anthropic-ratelimit-unified-7d-utilization": "0.2",
      "anthropic-ratelimit-unified-7d-reset": inSeconds(86_400),
    };
    expect(await oneRequest(p)).toBe(200);
    anthropic.rateLimitHeaders = {};
    await p.ok(["task", "add", "say something", "--code", "held"]);
    const r = await p.ok(["start", "held"]);
    expect(r.stdout).toMatch(
      /^Task held: waiting — held by \[usage_pause\]: anthropic's 5h window at 95 % \(threshold 90 %\); it starts by itself at \d{4}-/,
    );
    const shown = await p.json(["task", "show", "held"]);
    expect(shown.task.status).toBe("waiting");
    expect(shown.events.at(-1).data).toMatchObject({ reason: "usage_pause", credential: "anthropic", window: "5h" });
    const limits = (await p.ok(["stats", "limits"])).stdout;
    expect(limits).toContain("PAUSED until");
    expect(limits).toContain("5h window at 95 %");
    const requestsBefore = anthropic.received.filter((x) => x.method === "POST").length;
    // No command from here on: the reset passes, lazy starts the held turn, the agent finishes.
    const done = await until(
      async () => {
        const t = (await p.json(["task", "show", "held"])).task;
        return t.status === "done" ? t : undefined;
      },
      240_000,
      "the held turn to run after the reset",
    );
    expect(done.status).toBe("done");
    expect(anthropic.received.filter((x) => x.method === "POST").length).toBeGreaterThan(requestsBefore);
    expect((await p.ok(["logs", "held"])).stdout).toContain("Ran after the reset.");
    expect((await p.ok(["stats", "limits"])).stdout).not.toContain("PAUSED");
  }, 400_000);

  test("a quota 429 (unified-status rejected + reset) pauses the credential: lazy run exits 7 with the reset time", async () => {
    const p = await project();
    const { limits, health } = await after429(p, "usage limit reached", {
      "anthropic-ratelimit-unified-status": "rejected",
      "anthropic-ratelimit-unified-reset": inSeconds(3600),
      "anthropic-ratelimit-unified-representative-claim": "five_hour",
    });
    expect(limits.paused).toHaveLength(1);
    expect(limits.paused[0]).toMatchObject({ credential: "anthropic", cause: "quota" });
    expect(health.failures.quota).toBe(1);
    expect(health.failures["429"]).toBe(0);
    const audit = await p.json(["stats", "audit"]);
    expect(audit.rows.at(-1).note).toContain("quota used up (five_hour window)");
    const run = await p.run(["run", "anything"]);
    expect(run.code).toBe(7);
    expect(run.stderr).toContain("is held by [usage_pause]");
    expect(run.stderr).toContain(new Date(Number(limits.paused[0].resetsAt ? Date.parse(limits.paused[0].resetsAt) : 0)).toISOString());
    expect(anthropic.received).toHaveLength(0); // nothing was sent on the held turn
    expect((await p.ok(["run", "--help"])).stdout.replace(/\s+/g, " ")).toContain("7 held by [usage_pause]");
  }, 120_000);

  test("lazy run --wait waits out a pause and prints the turn's result", async () => {
    const p = await project(`"5h" = 50\n`);
    anthropic.answer({ text: "Waited, then ran." });
    anthropic.rateLimitHeaders = {
      "anthropic-ratelimit-unified-5h-utilization": "0.6",
      "anthropic-ratelimit-unified-5h-reset": inSeconds(4),
    };
    expect(await oneRequest(p)).toBe(200);
    anthropic.rateLimitHeaders = {};
    const r = await p.run(["run", "say it", "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("held by [usage_pause] (anthropic: 5h window at 60 % (threshold 50 %))");
    expect(r.stdout.trim()).toBe("Waited, then ran.");
  }, 400_000);

  test("a rate_limit_error 429 with retry-after: 1 does not pause", async () => {
    const p = await project();
    const { limits, health } = await after429(p, "slow down", { "retry-after": "1" });
    expect(limits.paused).toEqual([]);
    expect(health.failures["429"]).toBe(1);
    expect(health.failures.quota).toBe(0);
    expect((await p.json(["stats", "audit"])).rows.at(-1).note).toContain("rate limited (rate_limit_error), retry after 1 s");
  }, 60_000);
});
