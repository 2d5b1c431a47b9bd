/**
 * lazy's egress proxy behind the host's own proxy (a company proxy on loopback that takes
 * absolute-form requests and refuses CONNECT to port 80, test/helpers/company-proxy.ts), with
 * no container: the host's own processes may use the egress proxy, so a test talks to it as a
 * container's tool would. What the company proxy received is asserted byte for byte: plain HTTP
 * goes to it in absolute form with the host's password added here, the container's own
 * Proxy-Authorization gone, one request a connection (a second one naming another host never
 * leaves); the answer streams; NO_PROXY (a CIDR block) sends a host around it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadText } from "../../src/config";
import { Egress } from "../../src/egress";
import type { Lookup } from "../../src/egress/policy";
import * as Log from "../../src/util/log";
import { type CompanyProxy, companyProxy, heldStream } from "../helpers/company-proxy";

const PASSWORD = `pw-${crypto.randomUUID()}`;
let corp: CompanyProxy;
let upstream: ReturnType<typeof Bun.serve>;
/** What the upstream got: method, path and the provider's header. */
const got: { method: string; path: string; key: string | null; body: string }[] = [];
/** The streamed answer's second half waits for this. */
let release: () => void = () => {};

beforeAll(() => {
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      const u = new URL(req.url);
      got.push({ method: req.method, path: `${u.pathname}${u.search}`, key: req.headers.get("x-api-key"), body: await req.text() });
      if (u.pathname !== "/stream") return new Response(`hello from ${u.pathname}`);
      const stream = heldStream("data: first\n\n", "data: second\n\n");
      release = stream.release;
      return stream.response;
    },
  });
  // A name only the company's side resolves, to the upstream.
  corp = companyProxy("alice", PASSWORD, { "intranet.corp.test": upstream.port as number });
});

afterAll(() => {
  corp?.stop();
  upstream?.stop(true);
});

/** An egress proxy on 127.0.0.1 allowing the upstream, with the host's environment `env` (and its DNS `lookup`). */
function egress(env: Record<string, string>, lookup?: Lookup): { port: number; stop(): void } {
  const loaded = loadText(`[container]\nallow = ["127.0.0.1:${upstream.port}", "intranet.corp.test", "*.wild.test"]\n`);
  if (!loaded.ok) throw new Error("lazy.toml");
  const e = new Egress({
    config: () => loaded.config,
    grants: { all: () => [], allMcp: () => [], version: () => 0 },
    audit: { write() {}, refused() {} },
    log: Log.create("egress"),
    onLeak() {},
    env,
    lookup,
  });
  return { port: e.listenFor("127.0.0.1"), stop: () => e.stop() };
}

/** Raw bytes to the egress proxy, as a client with HTTP_PROXY sends them; calls `each` with the answer so far. */
function raw(port: number, bytes: string, each: (text: string) => void = () => {}): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = "";
    void Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        open: (s) => void s.write(bytes),
        data: (_s, d) => {
          text += d.toString("latin1");
          each(text);
        },
        close: () => resolve(text),
        error: (_s, e) => reject(e),
      },
    });
  });
}

describe("plain HTTP behind the host's proxy", () => {
  test("goes to it in absolute form with the host's password, not as a CONNECT tunnel; one request a connection; the answer streams", async () => {
    const e = egress({ HTTP_PROXY: corp.url, no_proxy: "", NO_PROXY: "" });
    try {
      const at = corp.received.length;
      const body = '{"ask":"hi"}';
      const first =
        `POST http://127.0.0.1:${upstream.port}/stream?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n` +
        `Proxy-Authorization: Basic Y29udGFpbmVyOmp1bms=\r\nProxy-Connection: keep-alive\r\nx-api-key: provider-own-key\r\n` +
        `Content-Length: ${body.length}\r\n\r\n${body}`;
      // A second request on the same connection, naming a host the policy never allowed.
      const second = `GET http://evil.example/steal HTTP/1.1\r\nHost: evil.example\r\n\r\n`;
      let sawFirst = false;
      const answer = await raw(e.port, first + second, (t) => {
        // The first event arrived while the upstream still holds the second: streamed, not buffered.
        if (!sawFirst && t.includes("data: first")) {
          sawFirst = true;
          expect(t).not.toContain("data: second");
          release();
        }
      });
      expect(sawFirst).toBe(true);
      expect(answer).toStartWith("HTTP/1.1 200");
      expect(answer).toContain("data: second");
      const sent = corp.received.slice(at);
      expect(sent).toHaveLength(1);
      const [head, rest] = sent[0]!.split("\r\n\r\n");
      const lines = head!.split("\r\n");
      expect(lines[0]).toBe(`POST http://127.0.0.1:${upstream.port}/stream?x=1 HTTP/1.1`);
      expect(lines).toContain(`Proxy-Authorization: Basic ${Buffer.from(`alice:${PASSWORD}`).toString("base64")}`);
      expect(lines).toContain("Connection: close");
      expect(lines).toContain("x-api-key: provider-own-key");
      // The container's own proxy headers never reach the company.
      expect(head).not.toContain("Y29udGFpbmVyOmp1bms=");
      expect(head!.toLowerCase()).not.toContain("proxy-connection");
      expect(rest).toBe(body);
      expect(corp.lines.slice(-1)).toEqual([`POST http://127.0.0.1:${upstream.port}/stream?x=1 HTTP/1.1`]);
      expect(corp.lines.some((l) => l.startsWith("CONNECT") || l.includes("evil.example"))).toBe(false);
      expect(got.at(-1)).toEqual({ method: "POST", path: "/stream?x=1", key: "provider-own-key", body });
      // The host's password never comes back to the client.
      expect(answer).not.toContain(PASSWORD);
    } finally {
      e.stop();
    }
  });

  test("a chunked body is framed and sent whole; what follows it is dropped", async () => {
    const e = egress({ HTTP_PROXY: corp.url, NO_PROXY: "" });
    try {
      const at = corp.received.length;
      const req =
        `PUT http://127.0.0.1:${upstream.port}/upload HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nGET http://evil.example/ HTTP/1.1\r\n\r\n`;
      const answer = await raw(e.port, req);
      expect(answer).toStartWith("HTTP/1.1 200");
      expect(answer).toContain("hello from /upload");
      expect(got.at(-1)).toMatchObject({ method: "PUT", path: "/upload", body: "hello world" });
      expect(corp.received.slice(at).join("")).not.toContain("evil.example");
    } finally {
      e.stop();
    }
  });

  test("a password the host's proxy refuses (407) is said by lazy, naming HTTP_PROXY", async () => {
    const e = egress({ HTTP_PROXY: corp.url.replace(PASSWORD, "wrong"), NO_PROXY: "" });
    try {
      const answer = await raw(e.port, `GET http://127.0.0.1:${upstream.port}/x HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\n\r\n`);
      expect(answer).toStartWith("HTTP/1.1 502");
      expect(answer).toContain("answered 407");
      expect(answer).toContain("HTTP_PROXY");
      expect(answer).not.toContain("wrong");
    } finally {
      e.stop();
    }
  });

  test("a request that frames its body twice (Content-Length and Transfer-Encoding) is refused 400 before anything is sent", async () => {
    const e = egress({ HTTP_PROXY: corp.url, NO_PROXY: "" });
    try {
      const at = corp.received.length;
      const answer = await raw(
        e.port,
        `POST http://127.0.0.1:${upstream.port}/x HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
      );
      expect(answer).toStartWith("HTTP/1.1 400");
      expect(answer).toContain("both Content-Length and Transfer-Encoding");
      expect(corp.received.slice(at)).toEqual([]);
    } finally {
      e.stop();
    }
  });
});

describe("a name this host cannot resolve", () => {
  const nxdomain: Lookup = () => Promise.reject(Object.assign(new Error("not found"), { code: "ENOTFOUND" }));

  test("goes to the host's proxy by name, which resolves it on its side", async () => {
    const e = egress({ HTTP_PROXY: corp.url, NO_PROXY: "" }, nxdomain);
    try {
      const answer = await raw(e.port, "GET http://intranet.corp.test/wiki HTTP/1.1\r\nHost: intranet.corp.test\r\n\r\n");
      expect(answer).toStartWith("HTTP/1.1 200");
      expect(answer).toContain("hello from /wiki");
      expect(corp.lines.at(-1)).toBe("GET http://intranet.corp.test/wiki HTTP/1.1");
    } finally {
      e.stop();
    }
  });

  test("with no host proxy for it, is refused naming the name", async () => {
    const e = egress({ HTTP_PROXY: corp.url, NO_PROXY: ".corp.test" }, nxdomain);
    try {
      const at = corp.received.length;
      const answer = await raw(e.port, "GET http://intranet.corp.test/wiki HTTP/1.1\r\nHost: intranet.corp.test\r\n\r\n");
      expect(answer).toStartWith("HTTP/1.1 502");
      expect(answer).toContain("intranet.corp.test does not resolve (ENOTFOUND)");
      expect(corp.received.slice(at)).toEqual([]);
    } finally {
      e.stop();
    }
  });

  test("a name that does resolve, to this host's own address, is refused even behind the host's proxy", async () => {
    const e = egress({ HTTP_PROXY: corp.url, NO_PROXY: "" }, async () => [{ address: "127.0.0.1", family: 4 }]);
    try {
      const at = corp.received.length;
      // Allowed by a wildcard entry, which never reaches this host's own addresses.
      const answer = await raw(e.port, "GET http://sneaky.wild.test/ HTTP/1.1\r\nHost: sneaky.wild.test\r\n\r\n");
      expect(answer).toStartWith("HTTP/1.1 403");
      expect(answer).toContain("sneaky.wild.test resolves to 127.0.0.1: this host's own");
      expect(corp.received.slice(at)).toEqual([]);
    } finally {
      e.stop();
    }
  });
});

describe("NO_PROXY", () => {
  test("a CIDR block naming the upstream's address sends it around the host's proxy", async () => {
    const e = egress({ HTTP_PROXY: corp.url, HTTPS_PROXY: corp.url, NO_PROXY: "corp.example, 127.0.0.0/8" });
    try {
      const at = corp.received.length;
      const answer = await raw(
        e.port,
        `GET http://127.0.0.1:${upstream.port}/direct HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer).toStartWith("HTTP/1.1 200");
      expect(answer).toContain("hello from /direct");
      expect(corp.received.slice(at)).toEqual([]);
    } finally {
      e.stop();
    }
  });
});
