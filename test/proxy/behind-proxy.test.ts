/**
 * lazy's model proxy behind a company proxy (HTTP_PROXY in the daemon's environment) with a
 * plain-HTTP provider on loopback (a local gateway, an Ollama box): it goes direct whatever
 * NO_PROXY says (the company proxy cannot reach this host's loopback, and would read the key),
 * and the answer streams. A NO_PROXY CIDR block naming the provider changes nothing. A
 * plain-http provider on another host is refused instead (test/attacks/upstream-proxy.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type CompanyProxy, companyProxy, heldStream } from "../helpers/company-proxy";
import { keyedProject, upstream } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";

const KEY = "sk-ant-api03-BEHINDCORP-" + "c".repeat(69) + "AA";
let corp: CompanyProxy;
let provider: ReturnType<typeof Bun.serve>;
const seen: { path: string; key: string | null }[] = [];
let release: () => void = () => {};

beforeAll(() => {
  corp = companyProxy("bob", `pw-${crypto.randomUUID()}`);
  provider = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      await req.arrayBuffer();
      seen.push({ path: new URL(req.url).pathname, key: req.headers.get("x-api-key") });
      const stream = heldStream(
        'event: message_start\ndata: {"type":"message_start"}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      );
      release = stream.release;
      return stream.response;
    },
  });
});

afterAll(async () => {
  corp?.stop();
  provider?.stop(true);
  await cleanupAll();
});

/** One streamed model request through the project's proxy on its host grant: the events, and whether the first came before the rest was released. */
async function streamed(p: Project): Promise<{ status: number; text: string; streamed: boolean; placeholder: string }> {
  const g = await p.grant({ role: "host" });
  const res = await fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": g.placeholder },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, stream: true, messages: [{ role: "user", content: "hi" }] }),
  });
  const reader = res.body!.getReader();
  let text = "";
  let early = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (!early && text.includes("message_start")) {
      // The first event is here while the provider still holds the last one.
      early = !text.includes("message_stop");
      release();
    }
  }
  return { status: res.status, text, streamed: early, placeholder: g.placeholder };
}

describe("the CLI behind the host's proxy", () => {
  test("talks to its daemon on loopback directly: the company proxy never sees the API token or a request for it", async () => {
    const at = corp.received.length;
    const p = await keyedProject(
      upstream(`http://127.0.0.1:${provider.port}`),
      { anthropic: KEY },
      {
        HTTP_PROXY: corp.url,
        http_proxy: corp.url,
        HTTPS_PROXY: corp.url,
        NO_PROXY: "",
        no_proxy: "",
      },
    );
    await p.ok(["task", "add", "listed", "--code", "listed"]);
    expect((await p.ok(["task", "list"])).stdout).toContain("listed");
    const token = p.token();
    expect(token.length).toBeGreaterThan(20);
    const sent = corp.received.slice(at).join("");
    expect(sent).not.toContain(token);
    expect(sent).not.toContain("/api/");
  });
});

describe("a plain-HTTP provider behind the host's proxy", () => {
  test("on loopback goes direct, NO_PROXY or not: the company proxy sees nothing; the key reaches the provider; the answer streams", async () => {
    const p = await keyedProject(
      upstream(`http://127.0.0.1:${provider.port}`),
      { anthropic: KEY },
      {
        HTTP_PROXY: corp.url,
        http_proxy: corp.url,
        NO_PROXY: "",
        no_proxy: "",
      },
    );
    const at = corp.received.length;
    const r = await streamed(p);
    expect(r.status).toBe(200);
    expect(r.streamed).toBe(true);
    expect(r.text).toContain("message_stop");
    expect(seen.at(-1)).toEqual({ path: "/v1/messages", key: KEY });
    expect(corp.received.slice(at)).toEqual([]);
  });

  test("a NO_PROXY CIDR block naming the provider's address sends it around the proxy", async () => {
    const p = await keyedProject(
      upstream(`http://127.0.0.1:${provider.port}`),
      { anthropic: KEY },
      {
        HTTP_PROXY: corp.url,
        http_proxy: corp.url,
        NO_PROXY: "127.0.0.0/8",
        no_proxy: "127.0.0.0/8",
      },
    );
    const at = corp.received.length;
    const before = seen.length;
    const r = await streamed(p);
    expect(r.status).toBe(200);
    expect(seen.length).toBe(before + 1);
    expect(corp.received.slice(at)).toEqual([]);
  });
});
