/**
 * Two ways past the egress proxy's checks (issue 35, finding 10), played by a hostile client on
 * loopback speaking to lazy's real egress listener, with a real upstream that records what
 * reaches it (the listener is the same code a task container's HTTP_PROXY names;
 * test/attacks/network.test.ts sends from a real container):
 *
 * - a virtual host behind an allowed address: `GET http://ALLOWED/…` with `Host: other.example`
 *   let the server behind the allowed address serve a host the policy never allowed. Now the
 *   Host header must name the URL's host (refused otherwise; added when missing).
 * - the placeholder canary matched the secret only as is: base64 (at any offset, URL-safe too),
 *   hex, reversed, or cut across two header fields got it out. Now each is refused and the task
 *   stopped. A secret cut across two body chunks was caught before and still is.
 *
 * On the code before this, every Host test and every disguised form here reached the upstream.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { loadText } from "../../src/config";
import { Egress, PER_SOURCE } from "../../src/egress";
import type { AuditBatch, Grant } from "../../src/proxy";
import * as Log from "../../src/util/log";
import { until } from "../helpers/lazy";
import { raw, write } from "../helpers/raw-http";

const PLACEHOLDER = `sk-ant-api03-lazy-${"Q7x_-9".repeat(14)}zzzzAA`;
const grants: Grant[] = [
  {
    token: PLACEHOLDER,
    role: "agent",
    taskId: "t-1",
    taskRef: "exfil",
    profile: "claude",
    envVar: "ANTHROPIC_API_KEY",
    provider: "anthropic",
    session: null,
    createdAt: new Date().toISOString(),
  } as unknown as Grant,
];

let upstream: ReturnType<typeof Bun.serve>;
/** What reached the upstream: the Host it was asked for, the path, the body. */
let got: { host: string | null; path: string; body: string }[] = [];
let headArrived: () => void = () => {};
const leaks: string[] = [];
const rows: string[] = [];
let e: Egress;
let port: number;

beforeAll(() => {
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      headArrived();
      const entry = { host: req.headers.get("host"), path: new URL(req.url).pathname, body: "" };
      got.push(entry);
      entry.body = await req.text().catch(() => "(cut)");
      return new Response("served");
    },
  });
  const loaded = loadText(`[container]\nallow = ["127.0.0.1:${upstream.port}"]\n`);
  if (!loaded.ok) throw new Error("lazy.toml");
  e = new Egress({
    config: () => loaded.config,
    grants: { all: () => grants, allMcp: () => [], version: () => 0 },
    // Rows, and the tallies of refusals from a source no grant names (this test speaks from loopback).
    audit: { write: (b: AuditBatch) => rows.push(JSON.stringify(b)), refused: (t: unknown) => rows.push(JSON.stringify(t)) },
    log: Log.create("egress"),
    onLeak: (taskId) => leaks.push(taskId),
  });
  port = e.listenFor("127.0.0.1");
});
beforeEach(() => {
  got = [];
});
afterAll(() => {
  e?.stop();
  upstream?.stop(true);
});

const target = () => `127.0.0.1:${upstream.port}`;
const send = async (bytes: string) => (await raw(port, (s) => void s.write(bytes))).data;
const get = (headers: string) => `GET http://${target()}/page HTTP/1.1\r\n${headers}Connection: close\r\n\r\n`;
const post = (body: string, headers = "") =>
  `POST http://${target()}/collect HTTP/1.1\r\nHost: ${target()}\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

describe("the Host header through the egress proxy", () => {
  test("a Host naming another virtual host than the allowed URL is refused; the upstream sees nothing", async () => {
    const answer = await send(get("Host: internal-admin.example\r\n"));
    expect(answer).toStartWith("HTTP/1.1 403");
    expect(answer).toContain(`the Host header names "internal-admin.example" but the request goes to ${target()}`);
    expect(answer).toContain(`send Host: ${target()}`);
    expect(got).toEqual([]);
  });

  test("the same host on another port, or two Host headers, are refused too", async () => {
    expect(await send(get(`Host: 127.0.0.1:1\r\n`))).toStartWith("HTTP/1.1 403");
    expect(await send(get(`Host: ${target()}\r\nHost: internal-admin.example\r\n`))).toStartWith("HTTP/1.1 400");
    expect(got).toEqual([]);
  });

  test("the URL's own host passes (case aside), and a request with none gets it", async () => {
    expect(await send(get(`Host: ${target().toUpperCase()}\r\n`))).toContain("served");
    expect(await send(`GET http://${target()}/page HTTP/1.0\r\nConnection: close\r\n\r\n`)).toContain("served");
    expect(got.map((g) => g.host)).toEqual([target().toUpperCase(), target()]);
  });
});

describe("the placeholder, disguised, on its way out", () => {
  const b64 = (s: string, enc: "base64" | "base64url" = "base64") => Buffer.from(s).toString(enc);
  const forms: [string, string][] = [
    ["base64 in a JSON body", JSON.stringify({ data: b64(PLACEHOLDER) })],
    ["base64 at byte offset 1 of a longer encoded text", b64(`x${PLACEHOLDER}tail`)],
    ["base64 at byte offset 2", b64(`xy${PLACEHOLDER}`)],
    ["URL-safe base64", b64(`${PLACEHOLDER}??>>`, "base64url")],
    ["hex", Buffer.from(PLACEHOLDER).toString("hex")],
    ["upper-case hex", `0x${Buffer.from(PLACEHOLDER).toString("hex").toUpperCase()}`],
    ["reversed", [...PLACEHOLDER].reverse().join("")],
  ];
  for (const [name, body] of forms)
    test(`${name}: refused, naming whose it is, and nothing reaches the upstream`, async () => {
      const answer = await send(post(body));
      expect(answer).toStartWith("HTTP/1.1 403");
      expect(answer).toContain("the request carries task exfil's placeholder");
      expect(got).toEqual([]);
      expect(leaks).toContain("t-1"); // the task is stopped (once within 5 s, however many)
    });

  test("cut across two header fields: refused", async () => {
    const half = PLACEHOLDER.length >> 1;
    const answer = await send(
      get(`Host: ${target()}\r\nX-Part-A: ${PLACEHOLDER.slice(0, half)}\r\nX-Part-B: ${PLACEHOLDER.slice(half)}\r\n`),
    );
    expect(answer).toStartWith("HTTP/1.1 403");
    expect(answer).toContain("the request carries task exfil's placeholder");
    expect(got).toEqual([]);
  });

  test("base64 cut across two writes of a body: refused before the second half goes on", async () => {
    const encoded = b64(PLACEHOLDER);
    const half = encoded.length >> 1;
    const arrived = new Promise<void>((r) => {
      headArrived = r;
    });
    const r = await raw(port, async (s) => {
      await write(s, post(`${encoded}`).slice(0, -(encoded.length - half)));
      await arrived; // the head and the first half went on: the second half is another read
      await write(s, encoded.slice(half));
    });
    headArrived = () => {};
    expect(r.data).toStartWith("HTTP/1.1 403");
    expect(r.data).toContain("the request carries task exfil's placeholder (base64-encoded)");
    expect(got.map((g) => g.body).join("")).not.toContain(encoded);
  });

  test("no disguised form reaches the audit", async () => {
    await send(`GET http://${target()}/${b64(PLACEHOLDER, "base64url")} HTTP/1.1\r\nHost: ${target()}\r\n\r\n`);
    // The recorder writes its batch shortly after: a bounded wait for the refusal's row.
    for (let i = 0; i < 100 && !rows.join("\n").includes("exfil's placeholder (base64-encoded)"); i++) await Bun.sleep(20);
    const audit = rows.join("\n");
    expect(audit).toContain("the request carries task exfil's placeholder (base64-encoded)");
    expect(audit).not.toContain(b64(PLACEHOLDER, "base64url"));
    expect(audit).not.toContain(PLACEHOLDER);
  });
});

describe("connections one source holds through the egress proxy", () => {
  test("a package manager's burst of tunnels (well past 64) is admitted; one past the bound is refused with 429, and a closed one makes room", async () => {
    const { connect } = await import("node:net");
    const held: import("node:net").Socket[] = [];
    try {
      // Opened and left idle, as a pool of kept-alive tunnels is: each counts until it closes.
      for (let i = 0; i < PER_SOURCE; i++) {
        const s = connect(port, "127.0.0.1");
        s.on("error", () => {});
        held.push(s);
        await new Promise((r) => s.once("connect", r));
      }
      expect(PER_SOURCE).toBeGreaterThanOrEqual(200); // npm installing lazy's default image holds more than 64
      // The server counts a connection when it accepts it: one round trip tells it has them all.
      await Bun.sleep(200);
      const over = await send(get(`Host: ${target()}\r\n`));
      expect(over).toStartWith("HTTP/1.1 429");
      expect(over).toContain(`has ${PER_SOURCE} connections open through lazy's egress proxy (at most ${PER_SOURCE})`);
      expect(got).toEqual([]);
      held.pop()!.destroy();
      // A place is free once the server has seen that connection close: asked until then.
      const served = await until(
        async () => {
          const r = await send(get(`Host: ${target()}\r\n`));
          return r.includes("HTTP/1.1 429") ? undefined : r;
        },
        5_000,
        "a freed place",
      );
      expect(served).toContain("served");
    } finally {
      for (const s of held) s.destroy();
    }
  });
});
