/**
 * Attacks on lazy's egress proxy chained behind the host's own proxy (a company proxy on
 * loopback, test/helpers/company-proxy.ts, in the daemon's HTTP_PROXY). Plain HTTP goes to that
 * proxy in absolute form, and a forward proxy routes each request by the URL it names: a hostile
 * agent (real Claude Code in a real container, told by the mock provider) pipelines a second
 * request naming a host the policy never allowed behind an allowed one, hoping the company proxy
 * carries it. It must not leave: the allowed host gets its one request, the other host nothing,
 * and the company proxy never hears of it; the agent's own Proxy-Authorization is dropped and
 * the host's password never comes back to it.
 *
 * Against the code before: plain HTTP was tunnelled (CONNECT) to the allowed address only, so
 * the second request could not leave either (this guards the absolute-form path, which the
 * company proxy helper needs: it refuses CONNECT to port 80, where the old code failed outright).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type CompanyProxy, companyProxy } from "../helpers/company-proxy";
import { bash, containerProject, launched, removeContainers, settled } from "../helpers/fixtures";
import { cleanupAll, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-EGRESSCHAIN-" + "q".repeat(67) + "AA";
const PASSWORD = `corp-pw-${crypto.randomUUID()}`;
let anthropic: Mock.MockProvider;
let corp: CompanyProxy;
let allowed: ReturnType<typeof Bun.serve>;
let other: ReturnType<typeof Bun.serve>;
const hits = { allowed: [] as string[], other: [] as string[] };
let p: Project;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  corp = companyProxy("carol", PASSWORD);
  allowed = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => (hits.allowed.push(new URL(r.url).pathname), new Response("allowed-answer")),
  });
  other = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: (r) => (hits.other.push(new URL(r.url).pathname), new Response("other-answer")),
  });
  p = await containerProject(anthropic, KEY, {
    container: `allow = ["127.0.0.1:${allowed.port}"]\n`,
    env: { HTTP_PROXY: corp.url, http_proxy: corp.url, HTTPS_PROXY: corp.url, https_proxy: corp.url, NO_PROXY: "", no_proxy: "" },
  });
}, 300_000);

afterAll(async () => {
  removeContainers(p);
  corp?.stop();
  allowed?.stop(true);
  other?.stop(true);
  await cleanupAll(anthropic);
});

describe("plain HTTP chained behind the host's proxy", () => {
  test("a second request pipelined behind an allowed one, naming an unlisted host, never leaves; the host's password never comes back", async () => {
    // Both requests in one write on one connection to the egress proxy (the container's HTTP_PROXY).
    const a = `GET http://127.0.0.1:${allowed.port}/first HTTP/1.1\\r\\nHost: 127.0.0.1:${allowed.port}\\r\\nProxy-Authorization: Basic YWdlbnQ6b3du\\r\\n\\r\\n`;
    const b = `GET http://127.0.0.1:${other.port}/smuggled HTTP/1.1\\r\\nHost: 127.0.0.1:${other.port}\\r\\n\\r\\n`;
    const script = `const u=new URL(process.env.HTTP_PROXY);const s=require('net').connect(+u.port,u.hostname,()=>s.write('${a}${b}'));let d='';s.on('data',c=>d+=c);s.on('close',()=>console.log('ANSWER['+d.replace(/\\r?\\n/g,' | ')+']'));s.setTimeout(15000,()=>s.destroy())`;
    anthropic.answer(bash("Sent.", `node -e "${script}"`, "smuggle"));
    await launched(p, "smuggle", "send two requests");
    const s = await settled(p, "smuggle");
    console.log(
      JSON.stringify(anthropic.received.map((r) => [r.method, r.path])),
      JSON.stringify(corp.lines),
      corp.received.map((x) => x.slice(0, 600)),
    );
    expect(s.task.status, JSON.stringify(s.events.slice(-3))).toBe("done");
    // What the agent saw: the allowed host's answer only, and nothing of the host's password.
    const result = anthropic.received
      .filter((r) => r.method === "POST")
      .map((r) => /"tool_result","content":"(ANSWER\[[^"]*\])/.exec(r.body)?.[1])
      .find(Boolean);
    expect(result).toContain("allowed-answer");
    expect(result).not.toContain("other-answer");
    expect(result).not.toContain(PASSWORD);
    // Nothing reached the other host, and the company proxy never heard of it.
    expect(hits.allowed).toEqual(["/first"]);
    expect(hits.other).toEqual([]);
    // (The model's requests go through the company proxy too, and carry the agent's command: only
    // the egress proxy's connection, the one starting with the allowed request, is looked at.)
    const first = corp.received.filter((t) => t.startsWith(`GET http://127.0.0.1:${allowed.port}/first HTTP/1.1`));
    expect(first).toHaveLength(1);
    expect(first[0]).not.toContain("/smuggled");
    expect(corp.lines.filter((l) => l.includes(`:${other.port}`))).toEqual([]);
    // The agent's own Proxy-Authorization was dropped; the host's went with the request.
    expect(first[0]).not.toContain("YWdlbnQ6b3du");
    expect(first[0]).toContain(`Proxy-Authorization: Basic ${Buffer.from(`carol:${PASSWORD}`).toString("base64")}`);
  }, 600_000);
});
