/**
 * The secrets lazy hands an agent never leave through its egress proxy: a task's placeholder and
 * its MCP token (and a builder session's), in a plain-HTTP request line, a header or a body, or
 * in a CONNECT, are refused with 403 naming whose secret it was, the task is stopped once
 * (onLeak), and the audit row carries no secret. No container: the egress proxy on loopback, as
 * in chain.test.ts; test/attacks/network.test.ts sends them from a real task container.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { loadText } from "../../src/config";
import { Egress } from "../../src/egress";
import type { AuditBatch, Grant, McpToken } from "../../src/proxy";
import * as Log from "../../src/util/log";
import { until } from "../helpers/lazy";
import { raw } from "../helpers/raw-http";

const PLACEHOLDER = `sk-ant-api03-lazy-${"p".repeat(60)}`;
const MCP_TOKEN = `lazy-mcp-${"m".repeat(48)}`;
const BUILDER_TOKEN = `lazy-mcp-${"b".repeat(48)}`;
const now = new Date().toISOString();
const grants: Grant[] = [
  {
    token: PLACEHOLDER,
    role: "agent",
    taskId: "t-1",
    taskRef: "leaker",
    profile: "claude",
    envVar: "ANTHROPIC_API_KEY",
    provider: "anthropic",
    session: null,
    createdAt: now,
  } as unknown as Grant,
];
const mcp: McpToken[] = [
  { token: MCP_TOKEN, kind: "task", taskId: "t-1", session: null, pinnedIp: null, createdAt: now },
  { token: BUILDER_TOKEN, kind: "builder", taskId: null, session: "planner", pinnedIp: null, createdAt: now },
];

let upstream: ReturnType<typeof Bun.serve>;
let hits = 0;
const leaks: { taskId: string; why: string }[] = [];
const rows: string[] = [];
let e: Egress;
let port: number;

beforeAll(() => {
  upstream = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => {
      hits++;
      return new Response("reached");
    },
  });
  const loaded = loadText(`[container]\nallow = ["127.0.0.1:${upstream.port}"]\n`);
  if (!loaded.ok) throw new Error("lazy.toml");
  e = new Egress({
    config: () => loaded.config,
    grants: { all: () => grants, allMcp: () => mcp, version: () => 0 },
    audit: { write: (b: AuditBatch) => rows.push(JSON.stringify(b)), refused: (t) => rows.push(JSON.stringify(t)) },
    log: Log.create("egress"),
    onLeak: (taskId, why) => leaks.push({ taskId, why }),
  });
  port = e.listenFor("127.0.0.1");
});

afterAll(() => {
  e?.stop();
  upstream?.stop(true);
});

/** Bytes to the egress proxy, as a container's tool sends them; what came back until it closed. */
const send = async (bytes: string) => (await raw(port, (s) => void s.write(bytes))).data;

const target = () => `127.0.0.1:${upstream.port}`;
const get = (path: string, header = "") =>
  `GET http://${target()}${path} HTTP/1.1\r\nHost: ${target()}\r\n${header}Connection: close\r\n\r\n`;
const post = (body: string) =>
  `POST http://${target()}/collect HTTP/1.1\r\nHost: ${target()}\r\ncontent-length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;

describe("lazy's secrets on their way out through the egress proxy", () => {
  test("a request without any passes (the control)", async () => {
    expect(await send(get("/plain"))).toContain("reached");
    expect(hits).toBe(1);
  });

  test("the task's MCP token, in the path, a header or the body: 403 naming it, nothing reaches the host, the task stopped once", async () => {
    for (const req of [get(`/c?t=${MCP_TOKEN}`), get("/h", `x-token: ${MCP_TOKEN}\r\n`), post(JSON.stringify({ stolen: MCP_TOKEN }))]) {
      const got = await send(req);
      expect(got).toStartWith("HTTP/1.1 403");
      expect(got).toContain(
        "the request carries task leaker's MCP token (its key to lazy's tools), which never leaves through the egress proxy",
      );
    }
    expect(hits).toBe(1);
    // Within 5 s a task is stopped once, however many leaks.
    expect(leaks).toEqual([{ taskId: "t-1", why: "its MCP token was sent towards the network through lazy's egress proxy" }]);
  });

  test("a builder session's MCP token and the task's placeholder are refused too; no secret is in the audit", async () => {
    const b = await send(get(`/b?t=${BUILDER_TOKEN}`));
    expect(b).toStartWith("HTTP/1.1 403");
    expect(b).toContain("the request carries builder session planner's MCP token");
    const p = await send(`CONNECT ${target()} HTTP/1.1\r\nHost: ${target()}\r\nx-k: ${PLACEHOLDER}\r\n\r\n`);
    expect(p).toStartWith("HTTP/1.1 403");
    expect(p).toContain("the request carries task leaker's placeholder (its stand-in for a credential)");
    expect(hits).toBe(1);
    await until(() => rows.join("\n").includes("task leaker's placeholder"), 5_000, "the refusals' audit rows");
    const audit = rows.join("\n");
    expect(audit).toContain("builder session planner's MCP token"); // the refusals are recorded…
    for (const s of [PLACEHOLDER, MCP_TOKEN, BUILDER_TOKEN]) expect(audit).not.toContain(s); // …without the secrets
  });
});
