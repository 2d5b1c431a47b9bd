/**
 * The proxy under a misbehaving network and provider: long silences, resets, every failure
 * kind, usage-limit readings, the audit's bound, and a daemon killed with -9.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { cleanupAll, isAlive, Project, storedReadings, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REAL-" + "q".repeat(80) + "AA";
let mock: Mock.MockProvider;
let p: Project;
let g: { placeholder: string; proxyUrl: string };

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = new Project({
    toml: `[proxy]\nfirst_byte_timeout_s = 2\n\n[proxy.audit]\nmax_rows = 100\n\n[proxy.upstreams]\nanthropic = "${mock.url}"\n`,
  });
  await p.setCredential("anthropic", KEY);
  g = await p.grant({ role: "host", profile: "claude" });
});

afterAll(async () => {
  await cleanupAll();
  await mock?.close();
});

const call = (stream = true) =>
  fetch(`${g.proxyUrl}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
    body: JSON.stringify({ model: "m", max_tokens: 10, stream, messages: [{ role: "user", content: "hi" }] }),
  });

describe("streams and retries", () => {
  test("a stream silent for 20 s before its first byte, then with a 20 s gap, arrives intact", async () => {
    // This project allows a long first byte: the default (10 minutes) rather than the 2 s above.
    const q = new Project({ toml: `[proxy.upstreams]\nanthropic = "${mock.url}"\n` });
    await q.setCredential("anthropic", KEY);
    const gq = await q.grant({ role: "host", profile: "claude" });
    mock.reset();
    const whole = await (
      await fetch(`${gq.proxyUrl}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": gq.placeholder, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", stream: true, messages: [] }),
      })
    ).text();
    mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 20_000, gapMs: 20_000 };
    const started = Date.now();
    const res = await fetch(`${gq.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": gq.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [] }),
    });
    const text = await res.text();
    expect(Date.now() - started).toBeGreaterThanOrEqual(39_000);
    expect(res.status).toBe(200);
    expect(text.replace(/msg_[A-Za-z0-9]+/g, "msg_X")).toBe(whole.replace(/msg_[A-Za-z0-9]+/g, "msg_X"));
    expect(text).toContain("message_stop");
    mock.reset();
  }, 90_000);

  test("an upstream that resets the first connection: the agent sees success; the audit shows the retry", async () => {
    mock.reset();
    mock.behavior = { kind: "reset-first" };
    const res = await call(false);
    expect(res.status).toBe(200);
    expect((await res.json()).type).toBe("message");
    expect(mock.received).toHaveLength(2);
    expect(new Set(mock.received.map((r) => r.connection)).size).toBe(2);
    const row = (await p.json(["stats", "audit"])).rows.at(-1);
    expect(row).toMatchObject({ status: 200, retries: 1 });
    expect((await p.ok(["stats", "audit"])).stdout).toContain("retried 1×");
  });

  test("an agent that disconnects aborts the upstream call", async () => {
    mock.reset();
    mock.behavior = { kind: "hang" };
    const ac = new AbortController();
    const pending = fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder },
      body: "{}",
      signal: ac.signal,
    }).catch((e) => e);
    await mock.waitFor(1);
    ac.abort();
    await pending;
    const row = await until(
      async () => (await p.json(["stats", "audit"])).rows.find((r: any) => r.status === 499),
      5000,
      "the aborted call's audit row",
    );
    expect(row.note).toContain("disconnected");
    mock.reset();
  });
});

describe("readings and provider health", () => {
  test("0.42 shows as 42 %; secret-shaped values and cookies are stored nowhere", async () => {
    mock.reset();
    const secret = "sk-live-" + "s".repeat(40);
    mock.rateLimitHeaders = {
      "anthropic-ratelimit-unified-5h-utilization": "0.42",
      "anthropic-ratelimit-unified-5h-reset": String(Math.floor(Date.now() / 1000) + 3600),
      "anthropic-ratelimit-unified-5h-status": "allowed",
      "anthropic-ratelimit-unified-7d-utilization": "0.3",
      "x-ratelimit-remaining-tokens": secret,
    };
    mock.extraHeaders = { "set-cookie": "session=cookie-value-9f8e7d; Path=/", "request-id": "req_abcdef" };
    const rowsBefore = (await p.json(["stats", "audit"])).rows.length;
    await (await call()).text();
    const human = (await p.ok(["stats", "limits"])).stdout;
    expect(human).toMatch(/five_hour\s+42 %\s+allowed\s+resets /);
    expect(human).toMatch(/seven_day\s+30 %/);
    expect(human).toContain("credential:ANTHROPIC_API_KEY (credential anthropic)");
    const js = await p.json(["stats", "limits"]);
    const reading = js.limits.find((l: any) => l.owner === "credential:ANTHROPIC_API_KEY");
    expect(reading.headers["anthropic-ratelimit-unified-5h-utilization"]).toBe("0.42");
    expect(reading.headers["x-ratelimit-remaining-tokens"]).toBeUndefined();
    expect(reading.headers["set-cookie"]).toBeUndefined();
    // Readings and audit are written off the request path: both are in the files before they are read.
    await until(() => storedReadings(p).includes("0.42"), 10_000, "the reading in the store");
    await until(async () => (await p.json(["stats", "audit"])).rows.length > rowsBefore, 10_000, "the call's audit row");
    for (const f of p.allStateFiles()) {
      expect(f.bytes.includes(secret), f.path).toBe(false);
      expect(f.bytes.includes("cookie-value-9f8e7d"), f.path).toBe(false);
      expect(f.bytes.includes("req_abcdef"), f.path).toBe(false);
      expect(f.bytes.includes(KEY), f.path).toBe(f.path.endsWith("credentials.json"));
    }
    mock.rateLimitHeaders = {};
    mock.extraHeaders = {};
  });

  test("provider health counts one of each failure kind; lazy's own refusals are not counted", async () => {
    const closed = await Mock.anthropic();
    const h = new Project({ toml: `[proxy]\nfirst_byte_timeout_s = 1\n\n[proxy.upstreams]\nanthropic = "${closed.url}"\n` });
    await h.setCredential("anthropic", KEY);
    const gh = await h.grant({ role: "host", profile: "claude" });
    const send = () =>
      fetch(`${gh.proxyUrl}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": gh.placeholder, "content-type": "application/json" },
        body: "{}",
      });
    const statuses: number[] = [];
    closed.behavior = { kind: "reset" }; // reset twice: the retry resets too, so the agent sees it
    const reset = await send();
    statuses.push(reset.status);
    expect((await reset.json()).error.message).toMatch(
      /^Anthropic \(127\.0\.0\.1:\d+, profile claude, credential anthropic\) reset the connection \d+ ms into the request$/,
    );
    closed.behavior = { kind: "hang" };
    const timeout = await send();
    statuses.push(timeout.status);
    expect((await timeout.json()).error.message).toContain("sent no response headers");
    for (const status of [500, 529, 429]) {
      closed.behavior = {
        kind: "status",
        status,
        body: { type: "error", error: { type: status === 529 ? "overloaded_error" : "api_error", message: `upstream ${status}` } },
        headers: status === 429 ? { "retry-after": "7" } : {},
      };
      const r = await send();
      statuses.push(r.status);
      // Provider error responses reach the agent unchanged.
      expect((await r.json()).error.message).toBe(`upstream ${status}`);
    }
    await closed.close();
    const connect = await send();
    statuses.push(connect.status);
    expect((await connect.json()).error.message).toContain("could not be reached");
    // lazy's own refusal: not the provider's failure.
    await fetch(`${gh.proxyUrl}/api/pull`, { method: "POST", headers: { "x-api-key": gh.placeholder } });
    expect(statuses).toEqual([502, 504, 500, 529, 429, 502]);
    const health = (await h.json(["stats", "limits"])).health.find((x: any) => x.provider === "Anthropic");
    expect(health.failures).toEqual({ reset: 1, timeout: 1, connect: 1, "5xx": 1, "529": 1, "429": 1, quota: 0 }); // its 429 is a short rate limit, not a quota
    expect(health.requests).toBe(6);
    expect(health.latest.kind).toBe("connect");
    expect((await h.ok(["stats", "limits"])).stdout).toMatch(
      /Anthropic: 6 requests; reset 1, timeout 1, connect 1, 5xx 1, 529 1, 429 1; latest: /,
    );
    // A 429's retry-after is a reading too.
    expect((await h.json(["stats", "limits"])).limits[0].headers["retry-after"]).toBe("7");
  }, 60_000);

  test("the audit stays within its bound under 10x its row limit; token totals outlive eviction", async () => {
    const t = await p.json(["task", "add", "bounded", "--code", "bounded-task"]);
    const gt = await p.grant({ role: "agent", task: "bounded-task" });
    mock.reset();
    for (let i = 0; i < 1000; i += 50)
      await Promise.all(
        Array.from({ length: 50 }, () =>
          fetch(`${gt.proxyUrl}/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": gt.placeholder, "content-type": "application/json" },
            body: JSON.stringify({ stream: false, messages: [] }),
          }).then((r) => r.text()),
        ),
      );
    expect(mock.received).toHaveLength(1000);
    // The writer has stored all 1000 once the totals count them (a batch writes rows and counters together).
    const audited = () => p.json(["stats", "audit", "--task", t.id.slice(0, 6)]);
    await until(async () => (await audited()).totals.requests === 1000, 10_000, "the 1000 requests audited");
    const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
    const { n } = db.query("SELECT SUM(n) AS n FROM audit_batches").get() as { n: number };
    db.close();
    expect(n).toBeLessThanOrEqual(110);
    expect(n).toBeGreaterThan(0);
    const audit = await audited();
    expect(audit.totals.requests).toBe(1000);
    expect(audit.totals.output).toBe(1000 * Mock.DEFAULT_USAGE.output);
  }, 60_000);
});

describe("restart", () => {
  test("kill -9 of the daemon, restart: the same placeholder still works; readings still shown", async () => {
    mock.reset();
    mock.rateLimitHeaders = { "anthropic-ratelimit-unified-5h-utilization": "0.55" };
    await (await call()).text();
    // The reading is kept in the store off the request path: what a kill -9 leaves.
    await until(() => storedReadings(p).includes("0.55"), 10_000, "the reading in the store");
    mock.rateLimitHeaders = {};
    const pid = p.runtime()!.pid;
    process.kill(pid, "SIGKILL");
    await until(() => !isAlive(pid), 5000, "the daemon to die");
    const limits = await p.json(["stats", "limits"]); // starts a new daemon
    expect(p.runtime()!.pid).not.toBe(pid);
    expect(
      limits.limits.find((l: any) => l.owner === "credential:ANTHROPIC_API_KEY").windows.find((w: any) => w.name === "five_hour")
        .usedPercent,
    ).toBe(55);
    const proxyUrl = p.runtimeProxyUrl();
    const res = await fetch(`${proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ stream: false, messages: [] }),
    });
    expect(res.status).toBe(200);
    expect(mock.received.at(-1)!.headers["x-api-key"]).toBe(KEY);
  });
});
