/**
 * The Cursor route, driven by a client that behaves as docs/wire.md ("Cursor") describes cursor-agent
 * (it is not obtainable here): the key exchange with the key in a header and in a small JSON
 * body, then RPCs carrying the session token, one of them streamed. The upstream must see the
 * real key and the real session token; the agent must never see either.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "crsr_REAL" + "c".repeat(56);
let mock: Mock.CursorMockProvider;
let p: Project;

beforeAll(async () => {
  mock = await Mock.cursor();
  mock.apiKey = KEY;
  // cursor-two: a cursor-agent profile whose credential is not stored.
  p = new Project({
    toml: `[proxy.upstreams]\ncursor = "${mock.url}"\n\n[profiles.cursor-two]\nharness = "cursor"\ncredential = "cursor-two"\n`,
  });
  await p.setCredential("cursor", KEY);
});

afterAll(async () => {
  await cleanupAll();
  await mock?.close();
});

describe("the Cursor route", () => {
  test("key exchange and streamed calls: real key and session token upstream, placeholders only for the agent", async () => {
    mock.reset();
    const g = await p.grant({ role: "host", profile: "cursor" });
    expect(g.envVar).toBe("CURSOR_API_KEY");
    expect(g.placeholder).toStartWith("key_lazy_");
    const base = `${g.proxyUrl}/_lazy/cursor/${g.placeholder}`;
    const seenByAgent: string[] = [];

    const ex = await fetch(`${base}/auth/exchange_user_api_key`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json", "x-cursor-client-version": "2026.09.02" },
      body: JSON.stringify({ apiKey: g.placeholder }),
    });
    const exText = await ex.text();
    seenByAgent.push(exText, JSON.stringify([...ex.headers]));
    expect(ex.status).toBe(200);
    const tokens = JSON.parse(exText);
    expect(tokens.accessToken).toStartWith("eyJ");
    expect(tokens.accessToken).not.toBe(mock.realSessionToken);
    expect(tokens.refreshToken).not.toBe(mock.realRefreshToken);
    // Upstream: the real key in the header and in the body.
    const exchange = mock.received[0]!;
    expect(exchange.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(JSON.parse(exchange.body).apiKey).toBe(KEY);

    const models = await fetch(`${base}/aiserver.v1.AiService/AvailableModels`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.accessToken}`, "content-type": "application/json" },
      body: "{}",
    });
    const modelsText = await models.text();
    seenByAgent.push(modelsText);
    expect(models.status).toBe(200);
    expect(JSON.parse(modelsText).models.length).toBeGreaterThan(0);

    const run = await fetch(`${base}/agent.v1.AgentService/RunSSE`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${tokens.accessToken}`,
        "content-type": "application/connect+proto",
        "connect-protocol-version": "1",
      },
      body: Mock.connectFrame(0, new TextEncoder().encode("hello")),
    });
    const bytes = new Uint8Array(await run.arrayBuffer());
    seenByAgent.push(Buffer.from(bytes).toString("latin1"));
    expect(run.status).toBe(200);
    expect(bytes[0]).toBe(0); // a Connect data frame, passed through byte for byte
    expect(Buffer.from(bytes).toString("latin1")).toContain(Mock.DEFAULT_REPLY_TEXT.split(" ")[0]!);

    // What the upstream saw: the real session token on every later call, never a placeholder.
    for (const r of mock.received.slice(1)) expect(r.headers.authorization).toBe(`Bearer ${mock.realSessionToken}`);
    for (const r of mock.received) expect(JSON.stringify(r.headers) + r.body + r.path).not.toMatch(/key_lazy_|lazy.placeholder/);
    // What the agent saw: no real Cursor credential of any kind.
    for (const s of seenByAgent)
      for (const secret of [KEY, mock.realSessionToken, mock.realRefreshToken]) expect(s.includes(secret)).toBe(false);

    // Audited by the grant, with the path's placeholder segment elided; never logged.
    const rows = (await p.json(["stats", "audit"])).rows.filter((r: any) => r.path.startsWith("/_lazy/cursor/"));
    expect(rows.map((r: any) => r.path)).toEqual([
      "/_lazy/cursor/…/auth/exchange_user_api_key",
      "/_lazy/cursor/…/aiserver.v1.AiService/AvailableModels",
      "/_lazy/cursor/…/agent.v1.AgentService/RunSSE",
    ]);
    for (const r of rows) expect(r).toMatchObject({ role: "host", profile: "cursor", credential: "cursor", status: 200 });
    for (const f of p.allStateFiles())
      if (!f.path.endsWith("proxy-tokens.json")) expect(f.bytes.includes(g.placeholder), f.path).toBe(false);
    for (const f of p.allStateFiles())
      for (const secret of [mock.realSessionToken, mock.realRefreshToken]) expect(f.bytes.includes(secret), f.path).toBe(false);
  });

  test("a body over 64 KiB streams through unbuffered and untouched", async () => {
    mock.reset();
    const g = await p.grant({ role: "host", profile: "cursor" });
    const ex = await (
      await fetch(`${g.proxyUrl}/_lazy/cursor/${g.placeholder}/auth/exchange_user_api_key`, {
        method: "POST",
        headers: { authorization: `Bearer ${g.placeholder}` },
        body: "{}",
      })
    ).json();
    const big = new Uint8Array(200 * 1024).fill(0x61);
    const res = await fetch(`${g.proxyUrl}/_lazy/cursor/${g.placeholder}/agent.v1.AgentService/RunSSE`, {
      method: "POST",
      headers: { authorization: `Bearer ${ex.accessToken}`, "content-type": "application/connect+proto" },
      body: big,
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(mock.received.at(-1)!.bytes.length).toBe(big.length);
    expect(mock.received.at(-1)!.headers.authorization).toBe(`Bearer ${mock.realSessionToken}`);
  });

  test("malformed route by segment count only; unknown placeholder 401; a host login session forwarded untouched", async () => {
    mock.reset();
    const url = p.runtimeProxyUrl();
    const bad = await fetch(`${url}/_lazy/cursor/key_lazy_secretish`, { method: "POST" });
    expect(bad.status).toBe(400);
    const badText = await bad.text();
    expect(badText).toContain("3 path segments");
    expect(badText).not.toContain("key_lazy_secretish");
    expect(p.log()).not.toContain("key_lazy_secretish");

    const unknown = await fetch(`${url}/_lazy/cursor/key_lazy_${"0".repeat(40)}/auth/exchange_user_api_key`, {
      method: "POST",
      body: "{}",
    });
    expect(unknown.status).toBe(401);
    expect(mock.received).toHaveLength(0);

    // cursor-agent login on the host: its own session credential, no key to replace.
    const res = await fetch(`${url}/_lazy/cursor/-/aiserver.v1.AiService/AvailableModels`, {
      method: "POST",
      headers: { authorization: `Bearer ${mock.realSessionToken}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(mock.received.at(-1)!.headers.authorization).toBe(`Bearer ${mock.realSessionToken}`);
    const row = (await p.json(["stats", "audit"])).rows.at(-1);
    expect(row).toMatchObject({
      role: null,
      taskId: null,
      credential: null,
      path: "/_lazy/cursor/…/aiserver.v1.AiService/AvailableModels",
    });
  });

  test("a credential not stored is refused as the request path refuses it: the remedy for the agent, the cause on the row", async () => {
    mock.reset();
    // A launch needs the credential stored; here it is removed while the placeholder lives.
    await p.setCredential("cursor-two", KEY);
    const g = await p.grant({ role: "host", profile: "cursor-two" });
    await p.ok(["auth", "rm", "cursor-two"]);
    const res = await fetch(`${g.proxyUrl}/_lazy/cursor/${g.placeholder}/aiserver.v1.AiService/AvailableModels`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.placeholder}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(res.status).toBe(401);
    const err = await res.json();
    expect(err.code).toBe("unauthenticated");
    expect(err.message).toContain("profile cursor-two");
    expect(err.message).toContain("lazy auth set cursor-two");
    expect(mock.received).toHaveLength(0);
    const row = (await p.json(["stats", "audit"])).rows.at(-1);
    expect(row).toMatchObject({
      status: 401,
      role: "host",
      profile: "cursor-two",
      credential: null,
      note: "credential cursor-two missing",
    });
  });
});
