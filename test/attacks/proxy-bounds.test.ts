/**
 * The forwarding surface against hostile requests, sent byte for byte over raw TCP to the real
 * proxy (fetch would normalise them first). Each must be refused with a 403 permission_error
 * naming the method and path, audited with the grant's attribution, and never reach the
 * upstream: the mock's log proves none arrived.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { anthropicHost } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

let server: Mock.MockProvider;
let primary: Mock.MockProvider;
let p: Project;
let placeholder: string;
let primaryPlaceholder: string;
let port: number;

beforeAll(async () => {
  server = await Mock.anthropic();
  ({ anthropic: primary, p } = await anthropicHost(
    "sk-ant-api03-REAL-" + "z".repeat(80) + "AA",
    `\n[profiles.local]\nharness = "claude"\nendpoint = "${server.url}"\ncredential = "none"\n`,
  ));
  placeholder = (await p.grant({ role: "host", profile: "local" })).placeholder;
  primaryPlaceholder = (await p.grant({ role: "host", profile: "claude" })).placeholder;
  port = Number(new URL(p.runtimeProxyUrl()).port);
});

afterAll(() => cleanupAll(server, primary));

function raw(method: string, target: string, headers: Record<string, string>, body = "{}"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1");
    let data = "";
    s.setTimeout(10_000, () => {
      s.destroy();
      reject(new Error(`no answer to ${method} ${target}`));
    });
    s.on("data", (d) => (data += d.toString("latin1")));
    s.on("error", reject);
    s.on("close", () => {
      const status = Number(data.slice(9, 12));
      resolve({ status, body: data.slice(data.indexOf("\r\n\r\n") + 4) });
    });
    const head = [
      `${method} ${target} HTTP/1.1`,
      "Host: 127.0.0.1",
      "Connection: close",
      "Content-Type: application/json",
      `Content-Length: ${Buffer.byteLength(body)}`,
    ];
    for (const [k, v] of Object.entries(headers)) head.push(`${k}: ${v}`);
    s.write(head.join("\r\n") + "\r\n\r\n" + body);
  });
}

type Case = [method: string, target: string, headers?: Record<string, string>];

// Against a profile upstream (a model server you run): inference and probes only.
const profileCorpus: Case[] = [
  ["POST", "/api/pull"],
  ["DELETE", "/api/delete"],
  ["POST", "/api/create"],
  ["POST", "/api/push"],
  ["POST", "/api/copy"],
  ["POST", "/api/show"],
  ["GET", "/api/tags"],
  ["GET", "/api/ps"],
  ["POST", "/api/blobs/sha256:0123abcd"],
  ["POST", "/api/generate"],
  ["POST", "/api/chat"],
  ["POST", "/api/embed"],
  ["GET", "/api/version"],
  ["POST", "/api/signout"],
  ["DELETE", "/api/user/keys/abc"],
  ["GET", "/v1/models"],
  ["GET", "/v1/models/llama3"],
  ["POST", "/v1/chat/completions"],
  ["POST", "/v1/responses"],
  ["POST", "/v1/embeddings"],
  ["GET", "/v1/messages"],
  ["PUT", "/v1/messages"],
  ["DELETE", "/v1/messages"],
  ["PATCH", "/v1/messages"],
  ["OPTIONS", "/v1/messages"],
  ["POST", "/v1/messages/"],
  ["POST", "//v1/messages"],
  ["POST", "/v1//messages"],
  ["POST", "/v1/messages;.js"],
  ["POST", "/v1/messages;x=y/../../api/pull"],
  ["POST", "/v1/messages%2f..%2f..%2fapi%2fpull"],
  ["POST", "/v1/%2e%2e/api/pull"],
  ["POST", "/v1/%252e%252e/%252e%252e/api/pull"],
  ["POST", "/v1/messages/..%2f..%2fapi%2fpull"],
  ["POST", "/v1/messages/%2e%2e/%2e%2e/api/delete"],
  ["POST", "/v1/messages/../../api/pull"],
  ["POST", "/v1/./messages/../../api/create"],
  ["POST", "/v1\\..\\api\\pull"],
  ["POST", "/V1/MESSAGES"],
  ["POST", "/v1/messages/count_tokens/../../../api/pull"],
  ["POST", "/v1/messages%00"],
  ["POST", "/v1/mess%61ges"],
  ["POST", "/api/hello"],
  ["GET", "/"],
  ["POST", "/"],
  ["POST", "/v1/messages", { "X-HTTP-Method-Override": "DELETE" }],
  ["POST", "/v1/messages", { "X-HTTP-Method": "GET" }],
  ["POST", "/v1/messages", { "X-Method-Override": "PUT" }],
  ["POST", "/v1/messages", { "X-Original-URL": "/api/pull" }],
  ["POST", "/v1/messages", { "X-Rewrite-URL": "/api/delete" }],
  ["POST", `/v1/${"a".repeat(5000)}`],
];

// Against the Anthropic primary: the OpenAI wire's paths and the admin paths.
const primaryCorpus: Case[] = [
  ["POST", "/v1/chat/completions"],
  ["POST", "/v1/responses"],
  ["GET", "/v1/responses/resp_1"],
  ["POST", "/api/pull"],
  ["POST", "/v1/complete"],
  ["GET", "/v1/organizations/me"],
  ["POST", "/v1/messages/batches"],
  ["POST", "/v1/files"],
];

describe("hostile paths and methods", () => {
  test(`${profileCorpus.length + primaryCorpus.length} hostile requests: 403 permission_error naming method and path, audited, none arrives`, async () => {
    expect(profileCorpus.length + primaryCorpus.length).toBeGreaterThanOrEqual(40);
    server.reset();
    primary.reset();
    const failures: string[] = [];
    const run = async (cases: Case[], token: string) => {
      for (const [method, target, headers] of cases) {
        const r = await raw(method, target, { "x-api-key": token, ...headers });
        if (r.status !== 403) {
          failures.push(`${method} ${target.slice(0, 60)} → ${r.status} ${r.body.slice(0, 200)}`);
          continue;
        }
        const body = JSON.parse(r.body);
        expect(body.type).toBe("error");
        expect(body.error.type).toBe("permission_error");
        expect(body.error.message).toStartWith(`lazy's proxy refuses ${method} /`);
        expect(body.error.message).toContain("this upstream forwards only POST /v1/messages");
      }
    };
    await run(profileCorpus, placeholder);
    await run(primaryCorpus, primaryPlaceholder);
    expect(failures).toEqual([]);
    // None arrived at either upstream.
    expect(server.received).toEqual([]);
    expect(primary.received).toEqual([]);
    // Every refusal is in the audit trail with the grant's attribution.
    const rows = (await p.json(["stats", "audit", "--limit", "1000"])).rows.filter((r: any) => r.status === 403);
    expect(rows.filter((r: any) => r.profile === "local" && r.role === "host")).toHaveLength(profileCorpus.length);
    expect(rows.filter((r: any) => r.profile === "claude" && r.role === "host")).toHaveLength(primaryCorpus.length);
    for (const r of rows) expect(r.note).toStartWith("refused: ");
  }, 60_000);

  test("what a profile upstream does forward still arrives, with no credential at all for a local server", async () => {
    server.reset();
    const ok = await raw(
      "POST",
      "/v1/messages?beta=true",
      { "x-api-key": placeholder },
      JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    );
    expect(ok.status).toBe(200);
    const probe = await raw("HEAD", "/api/hello", {}, "");
    expect(probe.status).toBe(200);
    expect(server.received.map((r) => `${r.method} ${r.path}${r.query}`)).toEqual(["POST /v1/messages?beta=true"]);
    expect(server.received[0]!.headers["x-api-key"]).toBeUndefined();
    expect(server.received[0]!.headers.authorization).toBeUndefined();
  });
});
