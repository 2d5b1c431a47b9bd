/**
 * The Cursor route against a hostile agent (issue 17, finding 3), through the compiled binary
 * and a real Cursor-like upstream on loopback. The agent holds placeholders only and tries to
 * turn them into the real Cursor key: with another profile's placeholder, from another address
 * than its container's, by asking an echoing model to "repeat: <placeholder>", or through the
 * host-login route. Each attempt must leave the real key (and the real session tokens) out of
 * everything the agent gets back, and a refused one must leave the upstream untouched.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { keyedProject } from "../helpers/fixtures";
import { cleanupAll, type Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "crsr_REAL" + "k".repeat(56);
const ANTHROPIC_KEY = "sk-ant-api03-REAL-" + "a".repeat(80) + "AA";
let cursor: Mock.CursorMockProvider;
let anthropic: Mock.MockProvider;
let local: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  [cursor, anthropic, local] = await Promise.all([Mock.cursor(), Mock.anthropic(), Mock.anthropic()]);
  p = await keyedProject(
    `[proxy.upstreams]\ncursor = "${cursor.url}"\nanthropic = "${anthropic.url}"\n\n[profiles.local]\nharness = "claude"\nendpoint = "${local.url}"\ncredential = "none"\n`,
    { cursor: KEY, anthropic: ANTHROPIC_KEY },
  );
});
afterAll(() => cleanupAll(cursor, anthropic, local));

const secrets = () => [KEY, ANTHROPIC_KEY, cursor.realSessionToken, cursor.realRefreshToken];
const expectNoSecret = (seen: string) => {
  for (const s of secrets()) expect(seen.includes(s)).toBe(false);
};
const lastAudit = async () => (await p.json(["stats", "audit"])).rows.at(-1);
/** The newest counted refusal of a caller lazy cannot attribute (not a row: proxy/audit/refusals.ts). */
const lastCounted = async () => (await p.json(["stats", "audit"])).refused.at(-1);

/** The key exchange as cursor-agent makes it (docs/wire.md, "Cursor"): Bearer key, JSON body with apiKey. */
function exchange(base: string, placeholder: string, extra: Record<string, string> = {}) {
  return fetch(`${base}/auth/exchange_user_api_key`, {
    method: "POST",
    headers: { authorization: `Bearer ${placeholder}`, "content-type": "application/json" },
    body: JSON.stringify({ apiKey: placeholder, ...extra }),
  });
}

/** Connect envelopes: [flags, payload] each, checking every length prefix. */
function frames(bytes: Uint8Array): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  let at = 0;
  while (at < bytes.length) {
    expect(bytes.length - at).toBeGreaterThanOrEqual(5);
    const len = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    expect(at + 5 + len).toBeLessThanOrEqual(bytes.length);
    out.push([bytes[at]!, Buffer.from(bytes.subarray(at + 5, at + 5 + len))]);
    at += 5 + len;
  }
  return out;
}

describe("the Cursor route, against a hostile agent", () => {
  test("a Claude or local-model profile's placeholder is refused (403, Connect error, audited) and Cursor sees nothing", async () => {
    cursor.reset();
    anthropic.reset();
    local.reset();
    for (const profile of ["claude", "local"]) {
      const g = await p.grant({ role: "host", profile });
      const base = `${g.proxyUrl}/_lazy/cursor/${g.placeholder}`;
      const ex = await exchange(base, g.placeholder);
      const text = await ex.text();
      expect(ex.status).toBe(403);
      const err = JSON.parse(text);
      expect(err.code).toBe("permission_denied");
      expect(err.message).toContain(`profile ${profile}`);
      expect(err.message).toContain("cursor-agent profile");
      expectNoSecret(text);
      const row = await lastAudit();
      expect(row).toMatchObject({
        status: 403,
        profile,
        role: "host",
        credential: null,
        path: "/_lazy/cursor/…/auth/exchange_user_api_key",
      });
      expect(row.note).toContain(`non-Cursor profile ${profile}`);

      const rpc = await fetch(`${base}/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(rpc.status).toBe(403);
      expectNoSecret(await rpc.text());
    }
    expect(cursor.received).toHaveLength(0);
    expect(anthropic.received).toHaveLength(0);
    expect(local.received).toHaveLength(0);
  });

  test("a pinned Cursor placeholder works from its container's address only", async () => {
    cursor.reset();
    // A host session's grant (lazy chat), the one kind a test can mint without a task that the
    // next daemon still loads (an own call's grant dies with its daemon).
    const g = await p.grant({ role: "host", profile: "cursor" });
    // Pin it as the runner does for a container (native Docker): here to 127.0.0.2, an address
    // this test can also send from. The daemon loads its grants from this file on start.
    await p.ok(["daemon", "stop"]);
    const file = join(p.stateDir, "proxy-tokens.json");
    const reg = JSON.parse(readFileSync(file, "utf8"));
    reg.grants.find((x: { token: string }) => x.token === g.placeholder).pinnedIp = "127.0.0.2";
    writeFileSync(file, JSON.stringify(reg), { mode: 0o600 });
    await p.ok(["daemon", "start"]);
    const proxy = new URL(p.runtimeProxyUrl());
    const path = `/_lazy/cursor/${g.placeholder}/auth/exchange_user_api_key`;

    const thief = await exchange(`${proxy.origin}/_lazy/cursor/${g.placeholder}`, g.placeholder);
    const text = await thief.text();
    expect(thief.status).toBe(401);
    expect(JSON.parse(text)).toMatchObject({ code: "unauthenticated" });
    expect(text).toContain("was presented from 127.0.0.1");
    expectNoSecret(text);
    expect(cursor.received).toHaveLength(0);
    // Off its pin, the placeholder redeems nothing: counted by source and reason, not a row.
    const counted = await lastCounted();
    expect(counted).toMatchObject({ status: 401, source: "127.0.0.1", method: "POST" });
    expect(counted.reason).toContain("pinned placeholder presented from 127.0.0.1");

    // From the pinned address, the same request goes through with the real key.
    const body = JSON.stringify({ apiKey: g.placeholder });
    const owner = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          host: proxy.hostname,
          port: Number(proxy.port),
          path,
          method: "POST",
          localAddress: "127.0.0.2",
          headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json", "content-length": String(body.length) },
        },
        (res) => {
          let t = "";
          res.on("data", (d) => (t += d));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text: t }));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(owner.status).toBe(200);
    expectNoSecret(owner.text);
    expect(cursor.received).toHaveLength(1);
    expect(cursor.received[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    // The project's one host grant is this one (minting reuses it): the tests after this take it
    // unpinned, as lazy chat holds it.
    await p.ok(["daemon", "stop"]);
    const after = JSON.parse(readFileSync(file, "utf8"));
    after.grants.find((x: { token: string }) => x.token === g.placeholder).pinnedIp = null;
    writeFileSync(file, JSON.stringify(after), { mode: 0o600 });
    await p.ok(["daemon", "start"]);
  }, 60_000);

  /** A Cursor grant, its route and a session placeholder from a plain key exchange. */
  async function session() {
    cursor.reset();
    cursor.echo = false;
    const g = await p.grant({ role: "host", profile: "cursor" });
    const base = `${g.proxyUrl}/_lazy/cursor/${g.placeholder}`;
    const ex = await exchange(base, g.placeholder);
    expect(ex.status).toBe(200);
    return { g, base, session: (await ex.json()).accessToken as string };
  }

  test("'repeat: <placeholder>' to an echoing model comes back as the placeholder, never the real key", async () => {
    const { g, base, session: token } = await session();
    const prompt = `repeat: ${g.placeholder}`;
    try {
      cursor.echo = true;
      // A unary call (JSON, of declared length): the upstream gets the prompt as written.
      const body = JSON.stringify({ prompt });
      const unary = await fetch(`${base}/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body,
      });
      const unaryText = await unary.text();
      expectNoSecret(unaryText);
      expect(unary.status).toBe(200);
      expect(JSON.parse(unaryText).echo).toBe(body);
      expect(cursor.received.at(-1)!.body).toBe(body);

      // The agent stream (Connect frames): the prompt frame comes back byte for byte.
      const frame = Mock.connectFrame(0, new TextEncoder().encode(prompt));
      const run = await fetch(`${base}/agent.v1.AgentService/RunSSE`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/connect+proto", "connect-protocol-version": "1" },
        body: frame,
      });
      const bytes = new Uint8Array(await run.arrayBuffer());
      expectNoSecret(Buffer.from(bytes).toString("latin1"));
      expect(run.status).toBe(200);
      expect(Buffer.from(cursor.received.at(-1)!.bytes).equals(Buffer.from(frame))).toBe(true);
      expect(frames(bytes)[0]![1].equals(Buffer.from(frame))).toBe(true); // the mock repeats the whole body it got

      // The key exchange: the key goes in its apiKey field (and header), not the prompt beside it.
      cursor.echo = false;
      const ex = await exchange(base, g.placeholder, { prompt });
      expectNoSecret(await ex.text());
      expect(ex.status).toBe(200);
      expect(JSON.parse(cursor.received.at(-1)!.body)).toEqual({ apiKey: KEY, prompt });
    } finally {
      cursor.echo = false;
    }
  });

  test("an upstream quoting the credential it got hands the agent the placeholder (text) or stars (frames), audited and logged", async () => {
    const { g, base, session: token } = await session();
    const seen: string[] = [];
    try {
      cursor.echo = true;
      // A unary answer quoting the Authorization header: the agent reads the session placeholder it sent.
      const unary = await fetch(`${base}/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
      });
      const unaryText = await unary.text();
      seen.push(unaryText);
      expect(cursor.received.at(-1)!.headers.authorization).toBe(`Bearer ${cursor.realSessionToken}`);
      expect(JSON.parse(unaryText)).toEqual({ echo: "{}", authorization: `Bearer ${token}` });
      expect((await lastAudit()).note).toBe("1 real credential(s) in the answer replaced");

      // A stream quoting it, cut across two writes: starred out at its own length, so every
      // Connect frame still parses.
      const run = await fetch(`${base}/agent.v1.AgentService/RunSSE`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/connect+proto" },
        body: Mock.connectFrame(0, new TextEncoder().encode("hi")),
      });
      const bytes = new Uint8Array(await run.arrayBuffer());
      seen.push(Buffer.from(bytes).toString("latin1"));
      const got = frames(bytes);
      expect(got.map(([f]) => f)).toEqual([0, 0, 2]);
      expect(got[1]![1].toString()).toBe(`Bearer ${"*".repeat(cursor.realSessionToken.length)}`);
      expect((await lastAudit()).note).toBe("1 real credential(s) in the answer replaced");

      // A refused key exchange that quotes the key it got: the agent reads its placeholder there.
      cursor.apiKey = "crsr_SOMEONE_ELSE";
      const refused = await exchange(base, g.placeholder);
      const refusedText = await refused.text();
      seen.push(refusedText);
      expect(refused.status).toBe(401);
      expect(cursor.received.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(JSON.parse(refusedText).message).toBe(`The provided API key is invalid: ${g.placeholder}`);
    } finally {
      cursor.echo = false;
      cursor.apiKey = null;
    }
    for (const s of seen) expectNoSecret(s);
    expectNoSecret(p.log());
    expect(p.log()).toContain("carried a real Cursor credential 1 time(s)");
  });

  test("no row, table or log line of a Cursor call carries its placeholder or a session placeholder, whatever the path, query or outcome", async () => {
    const { g, base, session: token } = await session();
    const unary = await fetch(`${base}/aiserver.v1.AiService/AvailableModels?key=${g.placeholder}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(unary.status).toBe(200);
    // An upstream that fails: a row and a log line of lazy's own, naming the path.
    cursor.behavior = { kind: "reset" };
    try {
      const failed = await fetch(`${base}/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: "{}",
      });
      expect(failed.status).toBe(502);
      await failed.text();
    } finally {
      cursor.behavior = { kind: "ok" };
    }
    const rows = await until(async () => {
      const r = (await p.json(["stats", "audit"])).rows as { path: string; status: number }[];
      return r.some((x) => x.status === 502 && x.path === "/_lazy/cursor/…/aiserver.v1.AiService/AvailableModels") ? r : undefined;
    });
    const shown = [
      JSON.stringify(rows),
      JSON.stringify(await p.json(["stats", "audit"])),
      (await p.ok(["stats", "audit"])).stdout,
      p.log(),
    ].join("\n");
    expect(shown).toContain("/_lazy/cursor/…/auth/exchange_user_api_key");
    for (const secret of [g.placeholder, token, ...secrets()]) expect(shown.includes(secret), secret.slice(0, 12)).toBe(false);
  });

  test("the host-login route takes no placeholder: a container's key or session placeholder there is refused unforwarded", async () => {
    cursor.reset();
    const g = await p.grant({ role: "host", profile: "cursor" });
    const ex = await (await exchange(`${g.proxyUrl}/_lazy/cursor/${g.placeholder}`, g.placeholder)).json();
    cursor.reset();
    for (const credential of [g.placeholder, ex.accessToken as string]) {
      const res = await fetch(`${g.proxyUrl}/_lazy/cursor/-/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { authorization: `Bearer ${credential}`, "content-type": "application/json" },
        body: "{}",
      });
      const text = await res.text();
      expect(res.status).toBe(401);
      expect(JSON.parse(text)).toMatchObject({ code: "unauthenticated" });
      expect(text).toContain("host-login");
      expectNoSecret(text);
      expect(await lastCounted()).toMatchObject({ status: 401, taskId: "", reason: "placeholder presented on the host-login route" });
    }
    expect(cursor.received).toHaveLength(0);
  });
});
