import { describe, expect, test } from "bun:test";
import { pathRefusal, refusal } from "../../src/proxy/request/errors";
import * as Surface from "../../src/proxy/request/surface";

const kinds: Surface.UpstreamKind[] = ["anthropic-primary", "anthropic-profile", "openai"];
const none = new Headers();

/** Every request each kind forwards, as a real client would send it. */
const allowedOn: Record<Surface.UpstreamKind, Array<[string, string]>> = {
  "anthropic-primary": [
    ["POST", "/v1/messages"],
    ["POST", "/v1/messages?beta=true"],
    ["POST", "/v1/messages/count_tokens"],
    ["POST", "/v1/messages/count_tokens?beta=true"],
    ["GET", "/v1/models"],
    ["GET", "/v1/models?limit=1000"],
    ["GET", "/v1/models/claude-sonnet-4-5-20250929"],
    ["HEAD", "/"],
    ["HEAD", "/api/hello"],
  ],
  "anthropic-profile": [
    ["POST", "/v1/messages"],
    ["POST", "/v1/messages?beta=true"],
    ["POST", "/v1/messages/count_tokens?beta=true"],
    ["HEAD", "/"],
    ["HEAD", "/api/hello"],
  ],
  openai: [
    ["POST", "/v1/chat/completions"],
    ["POST", "/v1/responses"],
    ["POST", "/v1/responses/compact"],
    ["GET", "/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f"],
    ["DELETE", "/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f"],
    ["POST", "/v1/responses/resp_abc/cancel"],
    ["GET", "/v1/responses/resp_abc/input_items?limit=20&order=asc"],
    ["GET", "/v1/models"],
    ["GET", "/v1/models?client_version=0.171.0"],
    ["GET", "/v1/models/gpt-5.2-codex"],
    ["GET", "/v1/models/llama3:8b"],
    ["HEAD", "/"],
  ],
};

describe("allowed surface", () => {
  for (const kind of kinds) {
    for (const [method, target] of allowedOn[kind]) {
      test(`${kind}: ${method} ${target} passes`, () => {
        const v = Surface.check(kind, method, target, none);
        expect(v.ok).toBe(true);
        if (!v.ok) return;
        const q = target.indexOf("?");
        expect(v.path).toBe(q === -1 ? target : target.slice(0, q));
        expect(v.query).toBe(q === -1 ? "" : target.slice(q));
      });
    }
  }

  // Each wire's paths are refused on the other; the profile is a strict subset of the primary.
  for (const kind of kinds) {
    for (const other of kinds) {
      if (other === kind) continue;
      for (const [method, target] of allowedOn[other]) {
        // GET /v1/models and HEAD / are on both wires by design (see the next test).
        const alsoHere = allowedOn[kind].some(([m, t]) => m === method && t.split("?")[0] === target.split("?")[0]);
        const shared =
          (method === "HEAD" && target === "/") ||
          (kind !== "anthropic-profile" && other !== "anthropic-profile" && target.startsWith("/v1/models"));
        if (alsoHere || shared) continue;
        test(`${kind}: ${method} ${target} (from ${other}) is refused`, () => {
          expect(Surface.check(kind, method, target, none).ok).toBe(false);
        });
      }
    }
  }

  test("only the shared probe and model listing cross wires", () => {
    const crossing: string[] = [];
    for (const [method, target] of allowedOn["anthropic-primary"]) {
      if (Surface.check("openai", method, target, none).ok) crossing.push(`${method} ${target}`);
    }
    expect(crossing).toEqual(["GET /v1/models", "GET /v1/models?limit=1000", "GET /v1/models/claude-sonnet-4-5-20250929", "HEAD /"]);
  });
});

/** [method, target, headers, the path the refusal reports] */
type Hostile = [string, string, Record<string, string>, string];
const long = `/v1/messages/${"a".repeat(5000)}`;
const hostile: Hostile[] = [
  ["POST", "/api/pull", {}, "/api/pull"],
  ["DELETE", "/api/delete", {}, "/api/delete"],
  ["POST", "/api/create", {}, "/api/create"],
  ["POST", "/api/push", {}, "/api/push"],
  ["POST", "/api/copy", {}, "/api/copy"],
  ["GET", "/api/tags", {}, "/api/tags"],
  ["POST", "/api/generate", {}, "/api/generate"],
  ["POST", "/v1/%2e%2e/api/pull", {}, "/v1/%2e%2e/api/pull"],
  ["POST", "/v1/%252e%252e/api/pull", {}, "/v1/%252e%252e/api/pull"],
  ["POST", "/v1/messages%2f..%2f..%2fapi%2fpull", {}, "/v1/messages%2f..%2f..%2fapi%2fpull"],
  ["POST", "/v1/messages%2F..%2F..%2Fapi%2Fpull", {}, "/v1/messages%2F..%2F..%2Fapi%2Fpull"],
  ["POST", "/v1/%6dessages", {}, "/v1/%6dessages"],
  ["POST", "/v1/messages%00", {}, "/v1/messages%00"],
  ["POST", "/v1/messages\u0000", {}, "/v1/messages%00"],
  ["POST", "/v1/messages\u0000/../../api/pull", {}, "/v1/messages%00/../../api/pull"],
  ["POST", "/v1/messages\r\nx: y", {}, "/v1/messages%0D%0Ax: y"],
  ["POST", "/v1/messages%5c..%5capi%5cpull", {}, "/v1/messages%5c..%5capi%5cpull"],
  ["POST", "//v1/messages", {}, "//v1/messages"],
  ["POST", "/v1//messages", {}, "/v1//messages"],
  ["POST", "/v1\\messages", {}, "/v1\\messages"],
  ["POST", "/v1/messages\\..\\..\\api\\pull", {}, "/v1/messages\\..\\..\\api\\pull"],
  ["POST", "/v1/./messages", {}, "/v1/./messages"],
  ["POST", "/v1/x/../messages", {}, "/v1/x/../messages"],
  ["POST", "/v1/messages/../../api/pull", {}, "/v1/messages/../../api/pull"],
  ["POST", "/v1/messages/..", {}, "/v1/messages/.."],
  ["POST", "/v1/messages;.js", {}, "/v1/messages;.js"],
  ["POST", "/v1/messages;x=y", {}, "/v1/messages;x=y"],
  ["POST", "/v1/messages/", {}, "/v1/messages/"],
  ["POST", "/v1/messages#/api/pull", {}, "/v1/messages#/api/pull"],
  ["POST", "/V1/MESSAGES", {}, "/V1/MESSAGES"],
  ["POST", "/v1/Messages", {}, "/v1/Messages"],
  ["GET", "/v1/messages", {}, "/v1/messages"],
  ["PUT", "/v1/messages", {}, "/v1/messages"],
  ["PATCH", "/v1/messages", {}, "/v1/messages"],
  ["DELETE", "/v1/messages", {}, "/v1/messages"],
  ["OPTIONS", "/v1/messages", {}, "/v1/messages"],
  ["OPTIONS", "*", {}, "*"],
  ["TRACE", "/v1/messages", {}, "/v1/messages"],
  ["CONNECT", "api.anthropic.com:443", {}, "api.anthropic.com:443"],
  ["post", "/v1/messages", {}, "/v1/messages"],
  ["Post", "/v1/messages", {}, "/v1/messages"],
  ["POST ", "/v1/messages", {}, "/v1/messages"],
  ["GET", "/", {}, "/"],
  ["POST", "/", {}, "/"],
  ["GET", "/api/hello", {}, "/api/hello"],
  ["HEAD", "/api/version", {}, "/api/version"],
  ["POST", "/v1/messages", { "x-http-method-override": "DELETE" }, "/v1/messages"],
  ["POST", "/v1/messages", { "X-HTTP-Method": "DELETE" }, "/v1/messages"],
  ["POST", "/v1/messages", { "x-method-override": "PUT" }, "/v1/messages"],
  ["POST", "/v1/messages", { "x-original-url": "/api/pull" }, "/v1/messages"],
  ["POST", "/v1/chat/completions", { "x-http-method-override": "GET" }, "/v1/chat/completions"],
  ["HEAD", "/", { "x-http-method-override": "POST" }, "/"],
  ["POST", "http://evil/v1/messages", {}, "http://evil/v1/messages"],
  ["POST", "https://api.anthropic.com/v1/messages", {}, "https://api.anthropic.com/v1/messages"],
  ["POST", "v1/messages", {}, "v1/messages"],
  ["POST", "", {}, ""],
  ["POST", long, {}, `${long.slice(0, 200)}…`],
  ["POST", `/v1/messages?${"q".repeat(9000)}`, {}, "/v1/messages"],
  ["GET", "/v1/models/..", {}, "/v1/models/.."],
  ["GET", "/v1/models/.", {}, "/v1/models/."],
  ["GET", "/v1/models/a/b", {}, "/v1/models/a/b"],
  ["GET", "/v1/models/%2e%2e", {}, "/v1/models/%2e%2e"],
  ["GET", "/v1/models/x%2f..%2f..%2fapi%2ftags", {}, "/v1/models/x%2f..%2f..%2fapi%2ftags"],
  ["GET", "/v1/models/a;b", {}, "/v1/models/a;b"],
  ["GET", "/v1/models/a@b", {}, "/v1/models/a@b"],
  ["GET", "/v1/responses/../../api/pull", {}, "/v1/responses/../../api/pull"],
  ["POST", "/v1/responses/x/cancel/", {}, "/v1/responses/x/cancel/"],
  ["PUT", "/v1/responses/x", {}, "/v1/responses/x"],
  ["POST", "/v1/completions", {}, "/v1/completions"],
  ["POST", "/v1/embeddings", {}, "/v1/embeddings"],
  ["POST", "/v1/images/generations", {}, "/v1/images/generations"],
  ["GET", "/v1/files", {}, "/v1/files"],
  ["POST", "/v1/messages/batches", {}, "/v1/messages/batches"],
  ["POST", "/v1/messages\t", {}, "/v1/messages%09"],
  ["POST", "/v1/messages ", {}, "/v1/messages "],
  ["POST", "/v1/mеssages", {}, "/v1/mеssages"], // Cyrillic е
];

describe("hostile requests are refused on every kind", () => {
  test("the corpus is large", () => {
    expect(hostile.length).toBeGreaterThanOrEqual(40);
  });
  for (const kind of kinds) {
    for (const [method, target, headers, reported] of hostile) {
      const name = `${kind}: ${JSON.stringify(method)} ${JSON.stringify(target.slice(0, 60))} ${Object.keys(headers).join(" ")}`;
      test(name, () => {
        const v = Surface.check(kind, method, target, new Headers(headers));
        expect(v.ok).toBe(false);
        if (v.ok) return;
        expect(v.path).toBe(reported);
        expect(v.method).toBe(method);
        expect(v.reason.length).toBeGreaterThan(0);
        expect(v.allowed).toEqual(Surface.allowed(kind));
      });
    }
  }

  test("/v1/models is refused on an Anthropic profile upstream", () => {
    for (const target of ["/v1/models", "/v1/models?limit=1000", "/v1/models/llama3:8b"]) {
      const v = Surface.check("anthropic-profile", "GET", target, none);
      expect(v.ok).toBe(false);
    }
  });

  test("a refused method is reported escaped and bounded", () => {
    const v = Surface.check("openai", "PO\u0000ST".padEnd(100, "X"), "/v1/responses", none);
    expect(v.ok).toBe(false);
    if (v.ok) return;
    expect(v.method.startsWith("PO%00ST")).toBe(true);
    expect(v.method.length).toBeLessThanOrEqual(25);
  });

  test("the reason says what was wrong", () => {
    const reason = (m: string, t: string, h: Record<string, string> = {}) => {
      const v = Surface.check("anthropic-primary", m, t, new Headers(h));
      return v.ok ? "allowed" : v.reason;
    };
    expect(reason("POST", "/v1/%2e%2e/api/pull")).toContain("percent-encoding");
    expect(reason("POST", "/v1/x/../messages")).toContain("dot segment");
    expect(reason("POST", "/v1/messages/")).toContain("trailing slash");
    expect(reason("GET", "/v1/messages")).toContain("method not forwarded");
    expect(reason("POST", "/api/pull")).toContain("path not forwarded");
    expect(reason("POST", "http://evil/v1/messages")).toContain("origin-form");
    expect(reason("POST", "/v1/messages", { "x-http-method-override": "GET" })).toContain("override");
  });
});

describe("refusal bodies", () => {
  const refused = (kind: Surface.UpstreamKind, m: string, t: string) => {
    const v = Surface.check(kind, m, t, none);
    if (v.ok) throw new Error("expected a refusal");
    return v;
  };

  const bodyOf = (wire: Surface.Wire, v: Surface.Refused) => refusal(wire, pathRefusal(v)).json();

  test("the refusal is a code and its facts: method, path and what is forwarded", () => {
    expect(pathRefusal(refused("anthropic-profile", "POST", "/api/pull"))).toEqual({
      code: "path_refused",
      method: "POST",
      path: "/api/pull",
      allowed: ["POST /v1/messages", "POST /v1/messages/count_tokens", "HEAD /", "HEAD /api/hello"],
    });
  });

  test("Anthropic shape names method, path and what is forwarded", async () => {
    const res = refusal("anthropic", pathRefusal(refused("anthropic-profile", "POST", "/api/pull")));
    expect(res.status).toBe(403);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await res.json()).toEqual({
      type: "error",
      error: {
        type: "permission_error",
        message:
          "lazy's proxy refuses POST /api/pull: this upstream forwards only POST /v1/messages, " +
          "POST /v1/messages/count_tokens, HEAD /, HEAD /api/hello",
      },
    });
  });

  test("OpenAI shape", async () => {
    const body = (await bodyOf("openai", refused("openai", "POST", "/v1/messages"))) as {
      error: { message: string; type: string; param: null; code: string };
    };
    expect(body.error.type).toBe("permission_error");
    expect(body.error.param).toBeNull();
    expect(body.error.code).toBe("lazy_path_refused");
    expect(body.error.message).toStartWith("lazy's proxy refuses POST /v1/messages: this upstream forwards only POST /v1/chat/completions");
  });

  test("a control character never reaches the body raw", async () => {
    const body = JSON.stringify(await bodyOf("anthropic", refused("anthropic-primary", "POST", "/v1/\u0000x")));
    expect(body).toContain("/v1/%00x");
    expect(body).not.toContain("\\u0000");
  });

  test("wireOf maps kinds to their error shape", () => {
    expect(Surface.wireOf("anthropic-primary")).toBe("anthropic");
    expect(Surface.wireOf("anthropic-profile")).toBe("anthropic");
    expect(Surface.wireOf("openai")).toBe("openai");
  });
});
