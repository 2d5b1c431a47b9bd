// lazy's HTTP/1.1 client to the upstreams (src/proxy/upstream/), against raw TCP servers on
// loopback that answer byte for byte what each test scripts: framing, reuse, failures, TLS.
import { afterEach, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import * as Upstream from "../../src/proxy/upstream";
import { never, until } from "../helpers/lazy";

const servers: { stop(force?: boolean): void }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

type Conn = { id: number; buf: string };
/** A server that hands each complete request head (and the socket) to `answer`. */
function raw(answer: (head: string, socket: Bun.Socket<Conn>) => void) {
  let conns = 0;
  const server = Bun.listen<Conn>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(s) {
        s.data = { id: ++conns, buf: "" };
      },
      data(s, d) {
        s.data.buf += d.toString("latin1");
        for (let end = s.data.buf.indexOf("\r\n\r\n"); end !== -1; end = s.data.buf.indexOf("\r\n\r\n")) {
          const head = s.data.buf.slice(0, end);
          const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
          if (s.data.buf.length < end + 4 + length) return;
          s.data.buf = s.data.buf.slice(end + 4 + length);
          answer(head, s);
        }
      },
    },
  });
  servers.push(server);
  return { url: `http://127.0.0.1:${server.port}`, connections: () => conns };
}

const get = (url: string, extra: Partial<Upstream.Outgoing> = {}) =>
  Upstream.request({
    method: "GET",
    url,
    headers: "accept: */*\r\n",
    body: undefined,
    signal: () => new AbortController().signal,
    timeoutMs: 10_000,
    fresh: false,
    ...extra,
  });

describe("framing", () => {
  test("a chunked body split at awkward places, with extensions and trailers, arrives decoded; the next request reuses the connection", async () => {
    const srv = raw((_head, s) => {
      const wire =
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nx-trailer: t\r\n\r\n";
      // One byte at a time for the first 40, then the rest: every state of the parser sees a cut.
      for (let i = 0; i < 40; i++) s.write(wire[i]!);
      s.write(wire.slice(40));
    });
    const res = await get(`${srv.url}/a`);
    expect(res.status).toBe(200);
    expect(res.headers.get("transfer-encoding")).toBeNull();
    expect(res.length).toBeUndefined();
    expect(new TextDecoder().decode(await res.bytes())).toBe("hello, world");
    const again = await get(`${srv.url}/b`);
    expect(new TextDecoder().decode(await again.bytes())).toBe("hello, world");
    expect(srv.connections()).toBe(1);
  });

  test("a body ended by the connection's close; 100 Continue is skipped; HEAD has no body", async () => {
    const srv = raw((head, s) => {
      if (head.startsWith("HEAD")) return void s.write("HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n");
      s.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end");
      s.end();
    });
    const res = await get(`${srv.url}/`);
    expect(res.status).toBe(200);
    expect(new TextDecoder().decode(await res.bytes())).toBe("until the end");
    const head = await get(`${srv.url}/`, { method: "HEAD" });
    expect(head.hasBody).toBe(false);
    expect(head.length).toBe(1234);
    expect(srv.connections()).toBe(2); // the closed one was not reused
  });

  test("the request goes out with host, the given headers and content-length; fresh asks for a new connection", async () => {
    const heads: string[] = [];
    const srv = raw((head, s) => {
      heads.push(head);
      s.write("HTTP/1.1 204 No Content\r\n\r\n");
    });
    const body = new TextEncoder().encode('{"x":1}');
    const res = await Upstream.request({
      method: "POST",
      url: `${srv.url}/v1/messages?beta=true`,
      headers: "x-api-key: k\r\n",
      body,
      signal: () => new AbortController().signal,
      timeoutMs: 10_000,
      fresh: false,
    });
    expect(res.status).toBe(204);
    expect(heads[0]!.split("\r\n")).toEqual([
      "POST /v1/messages?beta=true HTTP/1.1",
      `host: ${srv.url.slice(7)}`,
      "x-api-key: k",
      "content-length: 7",
    ]);
    await get(`${srv.url}/`, { fresh: true });
    expect(srv.connections()).toBe(2);
  });
});

describe("failures", () => {
  test("closed before answering: ECONNRESET; nobody listening: ECONNREFUSED", async () => {
    const srv = raw((_h, s) => s.end());
    await expect(get(`${srv.url}/`)).rejects.toMatchObject({ code: "ECONNRESET" });
    const gone = raw(() => {});
    const url = gone.url;
    servers.pop()!.stop(true);
    await expect(get(`${url}/`)).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  test("no response headers within the wait: ETIMEDOUT; an abort before the headers drops the connection", async () => {
    let closed = 0;
    const asked = new Set<unknown>();
    const server = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: (s) => void asked.add(s), close: () => void closed++ } });
    servers.push(server);
    const url = `http://127.0.0.1:${server.port}/`;
    // lazy's own wait ran out (ETIMEDOUT), not the test's.
    await expect(get(url, { timeoutMs: 300 })).rejects.toMatchObject({ code: "ETIMEDOUT" });
    const ctrl = new AbortController();
    const pending = get(url, { signal: () => ctrl.signal });
    await until(() => asked.size === 2, 5_000, "the second request at the server");
    ctrl.abort();
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    for (let i = 0; i < 50 && closed < 2; i++) await Bun.sleep(20);
    expect(closed).toBe(2);
  });

  test("a body cut short by the upstream breaks the stream instead of ending it", async () => {
    const srv = raw((_h, s) => {
      s.write("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part");
      s.end();
    });
    const res = await get(`${srv.url}/`);
    await expect(res.bytes()).rejects.toMatchObject({ code: "ECONNRESET" });
  });
});

test("backpressure: an agent that does not read stops the upstream's writes; reading resumes them", async () => {
  const total = 64 * 1024 * 1024;
  const chunk = Buffer.alloc(1024 * 1024, 97);
  let sent = 0;
  // Write until the kernel takes no more; drain calls again when there is room.
  const pump = (s: Bun.Socket<undefined>) => {
    while (sent < total) {
      const want = Math.min(chunk.length, total - sent);
      const n = s.write(chunk.subarray(0, want));
      sent += Math.max(n, 0);
      if (n < want) return;
    }
  };
  const server = Bun.listen<undefined>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(s) {
        s.write(`HTTP/1.1 200 OK\r\ncontent-length: ${total}\r\n\r\n`);
        pump(s);
      },
      drain: pump,
    },
  });
  servers.push(server);
  const res = await get(`http://127.0.0.1:${server.port}/`);
  const reader = res.stream().getReader();
  let got = (await reader.read()).value!.length;
  await never(() => sent >= total / 2, 500, "half the body sent while nobody read it");
  const stalled = sent;
  expect(stalled).toBeLessThan(total / 2); // held back: the kernel's buffers and our queue, not 64 MiB
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    got += value.length;
  }
  expect(got).toBe(total);
  expect(sent).toBe(total);
});

describe("TLS", () => {
  const fixtures = resolve(import.meta.dir, "../fixtures/tls");
  const script = `
    const Upstream = await import(${JSON.stringify(resolve(import.meta.dir, "../../src/proxy/upstream/index.ts"))});
    try {
      const res = await Upstream.request({ method: "GET", url: process.env.URL, headers: "", body: undefined, signal: () => new AbortController().signal, timeoutMs: 10000, fresh: false });
      console.log(res.status, new TextDecoder().decode(await res.bytes()));
    } catch (e) { console.log("error", e.code, e.message); }`;

  test("an https upstream is reached over TLS, trusting NODE_EXTRA_CA_CERTS; an untrusted certificate is a TLS failure, with its reason", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: Bun.file(join(fixtures, "cert.pem")), key: Bun.file(join(fixtures, "key.pem")) },
      fetch: (req) => new Response(`over tls: ${new URL(req.url).pathname}`),
    });
    servers.push(server);
    const run = async (extra: Record<string, string>) => {
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        URL: `https://localhost:${server.port}/v1/models`,
        ...extra,
      };
      if (!extra.NODE_EXTRA_CA_CERTS) delete env.NODE_EXTRA_CA_CERTS;
      const p = Bun.spawn([process.execPath, "-e", script], { env, stdout: "pipe", stderr: "inherit" });
      const out = (await new Response(p.stdout).text()).trim();
      await p.exited;
      return out;
    };
    expect(await run({ NODE_EXTRA_CA_CERTS: join(fixtures, "cert.pem") })).toBe("200 over tls: /v1/models");
    const untrusted = await run({});
    // Not "ECONNREFUSED" (the upstream was reached; its certificate was refused), and the reason given.
    expect(untrusted).toMatch(/^error ETLS .*(self.signed|DEPTH_ZERO_SELF_SIGNED_CERT|UNABLE_TO_VERIFY)/i);
  });
});

test("a pooled connection the server closed as it was reused is retried on a new one, and is not counted as a retry", async () => {
  const { send } = await import("../../src/proxy/upstream");
  const perConn = new Map<number, number>();
  const srv = raw((_head, s) => {
    const n = (perConn.get(s.data.id) ?? 0) + 1;
    perConn.set(s.data.id, n);
    // The second request on a connection finds it closing: what an idle timeout racing a reuse looks like.
    if (n === 2) return void s.end();
    s.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  });
  const ctx = { firstByteTimeoutMs: () => 10_000 };
  const go = () => send(ctx, `${srv.url}/v1/models`, new Request(`${srv.url}/v1/models`), "", undefined);
  const first = await go();
  expect(first.ok && first.retries).toBe(0);
  const second = await go();
  expect(second.ok).toBe(true);
  if (second.ok) {
    expect(second.retries).toBe(0);
    expect(new TextDecoder().decode(await second.res.bytes())).toBe("ok");
  }
  expect(srv.connections()).toBe(2);
});
