/**
 * lazy's model proxy behind a company proxy (HTTP_PROXY in the daemon's environment) with a
 * plain-HTTP provider (a local gateway, an Ollama box): its requests reach the company proxy in
 * absolute form (`POST http://host/v1/messages HTTP/1.1`), never as a CONNECT tunnel, which
 * many such proxies refuse to port 80 (test/helpers/company-proxy.ts refuses it). The real
 * credential is swapped in by lazy, the last hop before the company's proxy, and the company
 * sees it only where the request itself carries it (the provider's own header: plain HTTP has
 * no other way to the provider); it never sees lazy's placeholder. The answer streams. A
 * NO_PROXY CIDR block naming the provider sends it around the company proxy.
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
  test("goes to the proxy in absolute form with the real key only in the provider's header; the answer streams", async () => {
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
    const sent = corp.received.slice(at).join("");
    const line = `POST http://127.0.0.1:${provider.port}/v1/messages`;
    expect(corp.lines.filter((l) => l.startsWith(line))).toHaveLength(1);
    expect(corp.lines.some((l) => l.startsWith("CONNECT"))).toBe(false);
    // The key: once, in the provider's own header; the placeholder: never.
    expect(sent.split(KEY)).toHaveLength(2);
    expect(sent).toMatch(new RegExp(`\\r\\nx-api-key: ${KEY}\\r\\n`, "i"));
    expect(sent).not.toContain(r.placeholder);
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
