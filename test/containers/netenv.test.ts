/**
 * Corporate networks: a CA only the host trusts (NODE_EXTRA_CA_CERTS) reaches image builds and
 * task containers ([container] inherit_network_env, on by default): a project Dockerfile whose
 * RUN fetches from a loopback HTTPS server signed by that CA builds (on the host's network:
 * build_network = "host"), and a task's request to it through the fence succeeds; with inheritance off the
 * build fails with the TLS error in lazy's message. The CA is made with openssl here. Real
 * Docker, real Claude Code, mock provider on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { Image } from "../../src/containers";
import { HostNet } from "../../src/network";
import { TEST_IMAGES } from "../helpers/env";
import { containerProject, removeContainers, upstream } from "../helpers/fixtures";
import { cleanupAll, type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { makeCa } from "../helpers/tls";

const KEY = "sk-ant-api03-NETENV-" + "n".repeat(71) + "AA";
const ANSWER = `hello-from-corp-${crypto.randomUUID()}`;
/**
 * The provider's name for lazy's own requests behind the company proxy: not loopback (a loopback
 * upstream always goes direct), resolved by the company proxy alone (it tunnels to 127.0.0.1).
 */
const PROVIDER = "provider.corp.test";
let anthropic: Mock.MockProvider;
let server: ReturnType<typeof Bun.serve>;
let dir: string;
let caFile: string;
let agentImage: string;
const projects: Project[] = [];

/** A RUN step that fetches from the server with Node (the test image has no curl) and prints the TLS error's code. */
const fetchStep = (port: number) =>
  `RUN node -e "fetch('https://127.0.0.1:${port}/').then(r => r.text()).then(t => console.log('fetched', t), e => { console.error('TLS error:', (e.cause && e.cause.code) || e.message); process.exit(1); })"`;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  dir = mkdtempSync(join(tmpdir(), "lazy-corp-ca-"));
  makeCa(dir, undefined, [PROVIDER]);
  caFile = join(dir, "ca.pem");
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(join(dir, "srv.pem"), "utf8"), key: readFileSync(join(dir, "srv.key"), "utf8") },
    fetch: () => new Response(ANSWER),
  });
  // The task image other container tests use (lazy's default on the test base, with this host's
  // own CAs); a project Dockerfile FROM it has Claude Code. Built here when no test made it yet.
  agentImage = Image.withHostNetwork(Image.plan(dir, { base: TEST_IMAGES.node }, ["claude"]), HostNet.read(process.env)).tag;
  if (sh("/", `docker image inspect ${agentImage}`).code !== 0) {
    const p = await containerProject(anthropic, KEY);
    projects.push(p);
    const r = await p.run(["run", "build the image"]);
    if (r.code !== 0) throw new Error(`building ${agentImage}: ${r.stderr}`);
  }
});

afterAll(async () => {
  for (const p of projects) removeContainers(p);
  server?.stop(true);
  await cleanupAll(anthropic);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/**
 * A company proxy on loopback: CONNECT only, with a user and password, then the tunnel to the
 * port asked for on 127.0.0.1. What it was asked and every byte it carried are kept.
 */
function companyProxy(user: string, password: string) {
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const seen: { target: string; authorized: boolean }[] = [];
  const carried: string[] = [];
  const listener = Bun.listen<{ up?: Socket<unknown>; buf: string }>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open: (s) => {
        s.data = { buf: "" };
      },
      data: (s, d) => {
        if (s.data.up) {
          carried.push(d.toString("latin1"));
          s.data.up.write(d);
          return;
        }
        s.data.buf += d.toString("latin1");
        const end = s.data.buf.indexOf("\r\n\r\n");
        if (end < 0) return;
        const target = /^CONNECT (\S+) HTTP/.exec(s.data.buf)?.[1] ?? "";
        const authorized = /\r\nproxy-authorization: ([^\r]*)\r\n/i.exec(s.data.buf)?.[1] === expected;
        seen.push({ target, authorized });
        if (!target || !authorized) {
          s.end("HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n");
          return;
        }
        void Bun.connect({
          hostname: "127.0.0.1",
          port: Number(target.split(":").pop()),
          socket: {
            open: (u) => {
              s.data.up = u;
              s.write("HTTP/1.1 200 Connection established\r\n\r\n");
            },
            data: (_u, x) => {
              carried.push(x.toString("latin1"));
              s.write(x);
            },
            close: () => {
              s.end();
            },
            error: () => {
              s.end();
            },
          },
        });
      },
      close: (s) => {
        s.data.up?.end();
      },
    },
  });
  return { url: `http://${user}:${password}@127.0.0.1:${listener.port}`, seen, carried, stop: () => listener.stop(true) };
}

async function corpProject(inherit: boolean, env: Record<string, string> = {}, toml = upstream(anthropic.url)): Promise<Project> {
  const port = server.port as number;
  const p = await containerProject(anthropic, KEY, {
    env: { NODE_EXTRA_CA_CERTS: caFile, ...env },
    files: (root) => writeFileSync(join(root, "Dockerfile"), `FROM ${agentImage}\n${fetchStep(port)}\n`),
  });
  projects.push(p);
  // The Dockerfile first, then lazy.toml naming it (trust approves the Dockerfile by its contents).
  // The build's RUN fetches from this host's loopback, which only a build on the host's network
  // reaches: build_network = "host" (builds on the project's network reach hosts through lazy's
  // egress proxy: test/attacks/build-trust.test.ts).
  p.writeToml(
    `[container]\ndockerfile = "Dockerfile"\nbuild_network = "host"\nallow = ["127.0.0.1:${port}"]\n${inherit ? "" : "inherit_network_env = false\n"}\n${toml}`,
  );
  return p;
}

describe("a CA only the host trusts", () => {
  test("a project Dockerfile's RUN fetching from a server it signed builds, and the task's request through the fence succeeds", async () => {
    const p = await corpProject(true);
    const port = server.port as number;
    // The agent reaches the server the way a tool honouring HTTPS_PROXY would: CONNECT through
    // lazy's egress proxy, then TLS checked against the CAs Node was given (NODE_EXTRA_CA_CERTS).
    const probe = `const http=require('http'),tls=require('tls');const p=new URL(process.env.HTTPS_PROXY);http.request({host:p.hostname,port:p.port,method:'CONNECT',path:'127.0.0.1:${port}'}).on('connect',(res,sock)=>{const s=tls.connect({socket:sock,host:'127.0.0.1'},()=>s.write('GET / HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n'));let d='';s.on('data',c=>d+=c);s.on('end',()=>console.log('body:',d.split('\\r\\n\\r\\n')[1]));s.on('error',e=>console.log('tls:',e.code))}).end()`;
    anthropic.reply = { text: "Fetched it.", toolUse: { name: "Bash", input: { command: `node -e "${probe}"`, description: "fetch" } } };
    anthropic.reset();
    const r = await p.run(["run", "fetch from the corporate server", "--code", "corp"]);
    expect(r.code, r.stderr).toBe(0);
    const log = p.log();
    expect(log).toContain(`CA certificates from`);
    expect(log).toContain(`${caFile} (NODE_EXTRA_CA_CERTS)`);
    expect(log).toContain(`build: fetched ${ANSWER}`);
    // The tool's output went back to the model: the body, through the fence, over verified TLS.
    expect(anthropic.received.some((q) => q.body.includes(`body: ${ANSWER}`))).toBe(true);
    expect(anthropic.received.some((q) => q.body.includes("tls: "))).toBe(false);
  }, 600_000);

  test("behind the host's proxy (with a password): the fence chains behind it, and lazy's own model requests to a named provider go through it by CONNECT, TLS end to end", async () => {
    const corp = companyProxy("alice", `pw-${crypto.randomUUID()}`);
    // The provider as HTTPS, with the test CA's certificate, in front of the mock.
    const front = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert: readFileSync(join(dir, "srv.pem"), "utf8"), key: readFileSync(join(dir, "srv.key"), "utf8") },
      fetch: async (req) => {
        const u = new URL(req.url);
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        const r = await fetch(`${anthropic.url}${u.pathname}${u.search}`, { method: req.method, headers: req.headers, body });
        return new Response(r.body, { status: r.status, headers: r.headers });
      },
    });
    try {
      const p = await corpProject(true, { HTTPS_PROXY: corp.url }, upstream(`https://${PROVIDER}:${front.port}`));
      const port = server.port as number;
      const probe = `const http=require('http'),tls=require('tls');const p=new URL(process.env.HTTPS_PROXY);http.request({host:p.hostname,port:p.port,method:'CONNECT',path:'localhost:${port}'}).on('connect',(res,sock)=>{const s=tls.connect({socket:sock,servername:'localhost'},()=>s.write('GET / HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n'));let d='';s.on('data',c=>d+=c);s.on('end',()=>console.log('body:',d.split('\\r\\n\\r\\n')[1]));s.on('error',e=>console.log('tls: '+e.code))}).on('response',r=>console.log('proxy said',r.statusCode)).end()`;
      anthropic.reply = { text: "Fetched it.", toolUse: { name: "Bash", input: { command: `node -e "${probe}"`, description: "fetch" } } };
      anthropic.reset();
      // The fence's allow list names the server by the name the agent asks for.
      p.writeToml(
        `[container]\ndockerfile = "Dockerfile"\nbuild_network = "host"\nallow = ["localhost:${port}"]\n\n${upstream(`https://${PROVIDER}:${front.port}`)}`,
      );
      const r = await p.run(["run", "fetch it behind the company proxy", "--code", "behind"]);
      expect(r.code, r.stderr).toBe(0);
      // The agent's request: through lazy's egress proxy, then the company's, with its password added on the host.
      expect(corp.seen).toContainEqual({ target: `localhost:${port}`, authorized: true });
      expect(anthropic.received.some((q) => q.body.includes(`body: ${ANSWER}`))).toBe(true);
      // lazy's own model requests: a CONNECT to the provider, the real key inside TLS only.
      expect(corp.seen).toContainEqual({ target: `${PROVIDER}:${front.port}`, authorized: true });
      const posts = anthropic.received.filter((q) => q.method === "POST");
      expect(posts.length).toBeGreaterThanOrEqual(2);
      for (const q of posts) expect(q.headers["x-api-key"]).toBe(KEY);
      expect(corp.carried.join("")).not.toContain(KEY);
      expect(corp.carried.join("")).not.toContain("x-api-key");
      expect(corp.seen.every((x) => x.authorized)).toBe(true);
    } finally {
      front.stop(true);
      corp.stop();
    }
  }, 600_000);

  test("lazy doctor names the CA bundle and the proxy in use (no password), and finds the base image, before any build", async () => {
    const corp = companyProxy("bob", `pw-${crypto.randomUUID()}`);
    try {
      const p = await containerProject(anthropic, KEY, { env: { NODE_EXTRA_CA_CERTS: caFile, HTTPS_PROXY: corp.url } });
      projects.push(p);
      const doctor = await p.run(["doctor", "--json"]);
      const found = (JSON.parse(doctor.stdout).findings as { check: string; ok: boolean; summary: string }[]).filter((f) =>
        ["network", "image"].includes(f.check),
      );
      const text = found.map((f) => `${f.ok ? "ok" : "NO"} ${f.summary}`).join("\n");
      expect(text).toContain(`ok CA bundle for builds and containers: `);
      expect(text).toContain(`${caFile} (NODE_EXTRA_CA_CERTS)`);
      expect(text).toContain(`ok proxy in use: http://bob:***@127.0.0.1:`);
      expect(text).toContain(`ok base image ${TEST_IMAGES.node}: on the engine`);
      expect(doctor.stdout + doctor.stderr).not.toContain(corp.url.split(":")[2]!.split("@")[0]!);
      // A proxy that does not answer, a CA that does not parse, a base that is nowhere: each named.
      writeFileSync(join(dir, "notpem.pem"), "hello\n");
      const bad = await containerProject(anthropic, KEY, {
        env: { NODE_EXTRA_CA_CERTS: join(dir, "notpem.pem"), HTTPS_PROXY: "http://127.0.0.1:9" },
        container: "",
        toml: `[container]\nbase = "lazy-test/no-such-base:1"\n\n${upstream(anthropic.url)}`,
      });
      projects.push(bad);
      const worse = await bad.run(["doctor", "--json"]);
      expect(worse.code).not.toBe(0);
      const problems = (JSON.parse(worse.stdout).findings as { ok: boolean; summary: string }[]).filter((f) => !f.ok).map((f) => f.summary);
      expect(problems).toContainEqual(
        expect.stringContaining(`The CA file ${join(dir, "notpem.pem")} (from NODE_EXTRA_CA_CERTS) holds no PEM certificate`),
      );
      expect(problems).toContainEqual(expect.stringContaining("the host's proxy http://127.0.0.1:9 does not answer (ECONNREFUSED)"));
      expect(problems).toContainEqual(
        expect.stringContaining("the base image lazy-test/no-such-base:1 is not on the engine and cannot be pulled"),
      );
    } finally {
      corp.stop();
    }
  }, 120_000);

  test('a base image that cannot be pulled says so with the remedy, not "Fix the Dockerfile"', async () => {
    const p = await containerProject(anthropic, KEY, {
      toml: `[container]\nbase = "lazy-test/no-such-base:1"\n\n${upstream(anthropic.url)}`,
    });
    projects.push(p);
    const r = await p.run(["run", "anything", "--code", "no-base"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("The base image lazy-test/no-such-base:1 could not be pulled");
    expect(r.stderr).toContain("Set [container] base in lazy.toml");
    expect(r.stderr).toContain("registry-mirrors");
    expect(r.stderr).not.toContain("Fix the Dockerfile");
  }, 120_000);

  test("with inherit_network_env = false the build fails, and lazy's message shows the TLS error", async () => {
    const p = await corpProject(false);
    const r = await p.run(["run", "anything", "--code", "nocorp"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/TLS error: (UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE)/);
    expect(r.stderr).toContain("Building the task image");
  }, 300_000);

  test("a CA file that does not parse is named in the error, with the variable that points at it", async () => {
    const bad = join(dir, "broken.pem");
    writeFileSync(bad, "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n");
    const p = await containerProject(anthropic, KEY, { env: { NODE_EXTRA_CA_CERTS: bad } });
    projects.push(p);
    const r = await p.run(["run", "anything", "--code", "bad-ca"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(`The CA file ${bad} (from NODE_EXTRA_CA_CERTS) does not parse`);
    expect(r.stderr).toContain("lazy daemon restart");
  }, 120_000);
});
