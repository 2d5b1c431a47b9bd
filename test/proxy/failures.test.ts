/**
 * How the proxy names an upstream it could not use (issue 18): a host that does not resolve is
 * named whole, a refused certificate is called a TLS failure with its reason (not "could not be
 * reached"), the Cursor route counts a 529 as a 529, and LAZY_UPSTREAM=fetch really sends the
 * requests through fetch. Everything stays on loopback: a `.invalid` name never resolves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-REAL-${"f".repeat(80)}AA`;
const fixtures = resolve(import.meta.dir, "../fixtures/tls");
let tls: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  // A TLS server whose certificate no one here trusts: its handshake fails without leaving loopback.
  tls = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: Bun.file(join(fixtures, "cert.pem")), key: Bun.file(join(fixtures, "key.pem")) },
    fetch: () => new Response("must not be reached"),
  });
});

afterAll(async () => {
  await cleanupAll();
  tls?.stop(true);
});

/** A project whose Anthropic upstream is `url`, and one request through its proxy. */
async function through(
  url: string,
  env: Record<string, string> = {},
): Promise<{ status: number; message: string; health: any; project: Project }> {
  const p = new Project({ toml: `[proxy]\nfirst_byte_timeout_s = 5\n\n[proxy.upstreams]\nanthropic = "${url}"\n`, env });
  await p.setCredential("anthropic", KEY);
  const g = await p.grant({ role: "host", profile: "claude" });
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
    body: "{}",
  });
  const message = ((await res.json()) as any).error.message as string;
  const health = (await p.json(["stats", "limits"])).health.find((x: any) => x.provider === "Anthropic");
  return { status: res.status, message, health, project: p };
}

// Both ways to the upstream: lazy's own client, and fetch (the escape hatch).
for (const via of ["lazy's client", "fetch"] as const) {
  const env: Record<string, string> = via === "fetch" ? { LAZY_UPSTREAM: "fetch" } : {};
  describe(`an upstream that cannot be used, through ${via}`, () => {
    test("a host name that does not resolve is named whole in the error", async () => {
      const r = await through("https://no-such-host.example.invalid", env);
      expect(r.status).toBe(502);
      expect(r.message).toMatch(
        /^Anthropic \(no-such-host\.example\.invalid, profile claude, credential anthropic\) could not be reached \(.*no-such-host\.example\.invalid\) \d+ ms into the request$/,
      );
      expect(r.health.failures.connect).toBe(1);
    });

    test("a refused certificate is a failed TLS handshake, with the reason, not 'could not be reached'", async () => {
      const r = await through(`https://localhost:${tls.port}`, env);
      expect(r.status).toBe(502);
      expect(r.message).toMatch(
        /^Anthropic \(localhost:\d+, profile claude, credential anthropic\) failed the TLS handshake \(.*(self.signed|SELF_SIGNED|UNABLE_TO_VERIFY).*\) \d+ ms into the request$/i,
      );
      expect(r.message).not.toContain("could not be reached");
      // Health counts it with the connect failures: the provider was not usable.
      expect(r.health.failures.connect).toBe(1);
    });
  });
}

describe("LAZY_UPSTREAM=fetch", () => {
  test("sends the upstream requests through fetch (the upstream sees fetch's own connection header), and the daemon log says so", async () => {
    const mock = await Mock.anthropic();
    try {
      const shapes: Record<string, string | undefined> = {};
      for (const [name, env] of [
        ["client", {}],
        ["fetch", { LAZY_UPSTREAM: "fetch" }],
      ] as const) {
        mock.reset();
        const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${mock.url}"\n`, env });
        await p.setCredential("anthropic", KEY);
        const g = await p.grant({ role: "host", profile: "claude" });
        const res = await fetch(`${g.proxyUrl}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
          body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
        });
        expect(res.status).toBe(200);
        await res.text();
        const [got] = await mock.waitFor(1);
        expect(got!.headers["x-api-key"]).toBe(KEY);
        // lazy's client writes no connection header (HTTP/1.1 keeps the connection by default); fetch writes one.
        shapes[name] = got!.headers.connection;
        const log = await Bun.file(join(p.stateDir, "daemon.log")).text();
        expect(log.includes("upstream requests go through fetch")).toBe(name === "fetch");
      }
      expect(shapes.client).toBeUndefined();
      expect(shapes.fetch).toMatch(/keep-alive/i);
    } finally {
      await mock.close();
    }
  });
});

describe("the Cursor route", () => {
  test("a 529 from Cursor is counted as a 529, not a 5xx, and reaches the agent unchanged", async () => {
    const mock = await Mock.cursor();
    try {
      const p = new Project({ toml: `[proxy.upstreams]\ncursor = "${mock.url}"\n` });
      await p.setCredential("anthropic", KEY); // starts the daemon
      const g = await p.grant({ role: "host", profile: "claude" });
      mock.behavior = { kind: "status", status: 529, body: { code: "unavailable", message: "overloaded" } };
      // The host-login route: no placeholder, forwarded as is.
      const res = await fetch(`${g.proxyUrl}/_lazy/cursor/-/aiserver.v1.AiService/AvailableModels`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status).toBe(529);
      expect(((await res.json()) as any).message).toBe("overloaded");
      const health = (await p.json(["stats", "limits"])).health.find((x: any) => x.provider === "Cursor");
      expect(health.failures["529"]).toBe(1);
      expect(health.failures["5xx"]).toBe(0);
      expect(health.latest.kind).toBe("529");
    } finally {
      await mock.close();
    }
  });
});
