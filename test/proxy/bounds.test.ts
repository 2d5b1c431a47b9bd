/**
 * What a hostile agent can make the proxy hold or do, over raw TCP (issue 17, items 4 and 5 and
 * the smaller findings): bodies past the bound in every framing, memory after large uploads,
 * pipelined requests, an HTTP/1.0 absolute-form target, a Cursor placeholder on the ordinary
 * route, and the Cursor route's idle cut. The mock providers' logs prove what went upstream.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { anthropicHost } from "../helpers/fixtures";
import { cleanupAll, isAlive, never, type Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { chunkedBody, raw, write } from "../helpers/raw-http";

const KEY = "sk-ant-api03-REAL-" + "b".repeat(80) + "AA";
const CURSOR_KEY = "key_" + "c".repeat(64);
const MiB = 1024 * 1024;

let anthropic: Mock.MockProvider;
let cursor: Mock.CursorMockProvider;
let p: Project;
let port: number;
let placeholder: string;

beforeAll(async () => {
  cursor = await Mock.cursor();
  ({ anthropic, p } = await anthropicHost(KEY, `cursor = "${cursor.url}"\n`));
  await p.setCredential("cursor", CURSOR_KEY);
  placeholder = (await p.grant({ role: "host", profile: "claude" })).placeholder;
  port = Number(new URL(p.runtimeProxyUrl()).port);
});

afterAll(() => cleanupAll(anthropic, cursor));

const head = (target: string, headers: string[], version = "1.1") => [`POST ${target} HTTP/${version}`, ...headers, "", ""].join("\r\n");
const json = (r: { data: string }) => JSON.parse(r.data.slice(r.data.indexOf("\r\n\r\n") + 4));
const rss = (pid: number) => Number(readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)![1]) / 1024;
const lastAudit = async () => (await p.json(["stats", "audit"])).rows.at(-1);
const BODY = JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] });

describe("request bodies are bounded in every framing", () => {
  test("a 100 MB chunked body gets 413 request_too_large and nothing reaches the upstream", async () => {
    anthropic.reset();
    let sent = 0;
    const r = await raw(
      port,
      async (s) => {
        await write(
          s,
          head("/v1/messages", [
            "Host: 127.0.0.1",
            `x-api-key: ${placeholder}`,
            "Content-Type: application/json",
            "Transfer-Encoding: chunked",
          ]),
        );
        sent = await chunkedBody(s, 100 * MiB);
      },
      60_000,
      1,
    );
    expect(r.statuses).toEqual([413]);
    expect(json(r).error.type).toBe("request_too_large");
    expect(json(r).error.message).toContain(`${32 * MiB} bytes`);
    // lazy writes the request's audit row when it is done with it: nothing went upstream after.
    const row = await until(async () => ((await lastAudit())?.status === 413 ? lastAudit() : undefined), 10_000, "the 413's audit row");
    expect(anthropic.received).toHaveLength(0);
    expect(row).toMatchObject({ status: 413, role: "host", path: "/v1/messages" });
    expect(row.note).toContain("chunked body");
    console.log(`100 MB chunked: 413 after ${r.ms} ms (${(sent / MiB).toFixed(0)} MiB written by then)`);
  });

  test("a declared 100 MB body is refused before it is read; a 1 MB one goes through", async () => {
    anthropic.reset();
    const r = await raw(
      port,
      (s) => void s.write(head("/v1/messages", ["Host: 127.0.0.1", `x-api-key: ${placeholder}`, `Content-Length: ${100 * MiB}`]) + "{"),
      10_000,
      1,
    );
    // At once, not after the body: the client never sends it, so an answer at all came before it.
    expect(r.statuses).toEqual([413]);
    const ok = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": placeholder, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "x".repeat(MiB) }] }),
    });
    expect(ok.status).toBe(200);
    await ok.text();
    expect(anthropic.received).toHaveLength(1);
  });

  test("the daemon's memory returns near its baseline after four concurrent 120 MiB uploads", async () => {
    anthropic.reset();
    const pid = p.runtime()!.pid;
    // Warm the path first, so the baseline is the daemon at work, not a cold one.
    for (let i = 0; i < 20; i++)
      await (
        await fetch(`${p.runtimeProxyUrl()}/v1/messages`, { method: "POST", headers: { "x-api-key": placeholder }, body: BODY })
      ).text();
    await Bun.sleep(1500);
    const baseline = rss(pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      if (isAlive(pid)) peak = Math.max(peak, rss(pid));
    }, 50);
    const one = () =>
      raw(
        port,
        async (s) => {
          await write(s, head("/v1/messages", ["Host: 127.0.0.1", `x-api-key: ${placeholder}`, "Transfer-Encoding: chunked"]));
          await chunkedBody(s, 120 * MiB);
        },
        60_000,
        1,
      );
    const results = await Promise.all([one(), one(), one(), one()]);
    expect(isAlive(pid)).toBe(true);
    for (const r of results) expect(r.statuses).toEqual([413]);
    // Four bodies within the bound, forwarded: the other side of the memory question.
    const fits = JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "x".repeat(30 * MiB) }] });
    const forwarded = await Promise.all(
      [0, 1, 2, 3].map(() =>
        fetch(`${p.runtimeProxyUrl()}/v1/messages`, { method: "POST", headers: { "x-api-key": placeholder }, body: fits }).then(
          (r) => r.status,
        ),
      ),
    );
    expect(forwarded).toEqual([200, 200, 200, 200]);
    clearInterval(sampler);
    // Back near the baseline within 20 s (a second a sample; it stops once there).
    const settled: number[] = [];
    for (let i = 0; i < 20 && !(settled.at(-1)! < baseline + 32); i++) {
      await Bun.sleep(1000);
      settled.push(rss(pid));
    }
    const after = settled.at(-1)!;
    console.log(
      `daemon RSS: baseline ${baseline.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, then a second apart: ${settled.map((x) => x.toFixed(0)).join(" ")} MB`,
    );
    expect(anthropic.received).toHaveLength(4 + 20);
    expect(after).toBeLessThan(baseline + 64);
  }, 120_000);
});

describe("pipelining and request targets", () => {
  test("two pipelined requests: answered in order, or the connection closed with nothing forwarded", async () => {
    const one =
      head("/v1/messages", [
        "Host: 127.0.0.1",
        `x-api-key: ${placeholder}`,
        "Content-Type: application/json",
        `Content-Length: ${BODY.length}`,
      ]) + BODY;
    for (let i = 0; i < 5; i++) {
      anthropic.reset();
      // Both in one write, as a pipelining client sends them.
      const r = await raw(port, (s) => void s.write(one + one), 3000);
      // Answered: the mock had each request before it answered. Closed: nothing may follow.
      if (r.statuses.length !== 2) await never(() => anthropic.received.length, 300, "a request forwarded from the closed connection");
      if (r.statuses.length === 2) {
        expect(r.statuses).toEqual([200, 200]);
        expect(anthropic.received).toHaveLength(2);
      } else {
        // Bun closes a connection that pipelines behind a pending request: then nothing may
        // have been billed for an answer the agent never gets.
        expect(r.statuses).toEqual([]);
        expect(r.closedByServer).toBe(true);
        expect(anthropic.received).toHaveLength(0);
      }
    }
  });

  test("an HTTP/1.0 absolute-form request keeps its path", async () => {
    anthropic.reset();
    for (const headers of [[] as string[], ["Host: 127.0.0.1"]]) {
      const r = await raw(
        port,
        (s) =>
          void s.write(
            head(
              `http://127.0.0.1:${port}/v1/messages?beta=true`,
              [...headers, `x-api-key: ${placeholder}`, "Content-Type: application/json", `Content-Length: ${BODY.length}`],
              "1.0",
            ) + BODY,
          ),
        5000,
      );
      expect(r.statuses).toEqual([200]);
    }
    expect(anthropic.received.map((x) => x.path + x.query)).toEqual(["/v1/messages?beta=true", "/v1/messages?beta=true"]);
  });
});

describe("Cursor placeholders and the Cursor route", () => {
  test("a Cursor profile's placeholder on the ordinary route is refused (403, audited); Cursor sees nothing", async () => {
    cursor.reset();
    anthropic.reset();
    const g = await p.grant({ role: "host", profile: "cursor" });
    for (const path of ["/v1/messages", "/aiserver.v1.AiService/AvailableModels"]) {
      const res = await fetch(`${p.runtimeProxyUrl()}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json" },
        body: "{}",
      });
      const text = await res.text();
      expect(res.status).toBe(403);
      expect(JSON.parse(text).error.type).toBe("permission_error");
      expect(text).toContain("/_lazy/cursor/");
      expect(text).not.toContain(CURSOR_KEY);
      const row = await lastAudit();
      expect(row).toMatchObject({ status: 403, profile: "cursor", role: "host", path });
      expect(row.note).toContain("Cursor profile cursor on the ordinary route");
    }
    expect(cursor.received).toHaveLength(0);
    expect(anthropic.received).toHaveLength(0);
  });

  test("stalled heads and bodies are cut on both routes; an idle keep-alive connection after a Cursor call is cut too", async () => {
    cursor.reset();
    anthropic.reset();
    const g = await p.grant({ role: "host", profile: "cursor" });
    const path = `/_lazy/cursor/${g.placeholder}/aiserver.v1.AiService/AvailableModels`;
    /** A JSON POST head declaring `length` bytes, then a body of two, on a connection left open for 30 s. */
    const sent = (target: string, credential: string, length: number) =>
      raw(
        port,
        (s) =>
          void s.write(head(target, ["Host: 127.0.0.1", credential, "Content-Type: application/json", `Content-Length: ${length}`]) + "{}"),
        30_000,
      );
    const [stalled, idle, stalledHead, stalledBody] = await Promise.all([
      // Half a declared body, then silence.
      sent(path, `authorization: Bearer ${g.placeholder}`, 100),
      // A whole request answered, then the connection left open and quiet.
      sent(path, `authorization: Bearer ${g.placeholder}`, 2),
      // The ordinary route: half a request head; half a declared body.
      raw(port, (s) => void s.write(`POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${placeholder}\r\n`), 30_000),
      sent("/v1/messages", `x-api-key: ${placeholder}`, 100),
    ]);
    console.log(
      `stalls: Cursor body cut after ${stalled.ms} ms, idle keep-alive after a Cursor call ${idle.ms} ms, a head ${stalledHead.ms} ms, a body ${stalledBody.ms} ms`,
    );
    for (const r of [stalledHead, stalledBody]) {
      expect(r.closedByServer).toBe(true);
      expect(r.statuses).toEqual([]);
    }
    expect(anthropic.received).toHaveLength(0);
    expect(stalled.closedByServer).toBe(true);
    expect(stalled.statuses).toEqual([]);
    expect(idle.statuses).toHaveLength(1); // the mock's own answer (a 401 without a session)
    expect(idle.closedByServer).toBe(true);
    expect(cursor.received).toHaveLength(1); // the whole one; the stalled one never went
  }, 60_000);
});
