/**
 * Corporate networks: a CA only the host trusts (NODE_EXTRA_CA_CERTS) reaches image builds and
 * task containers ([container] inherit_network_env, on by default): a project Dockerfile whose
 * RUN fetches from a loopback HTTPS server signed by that CA builds (builds run on the host's
 * network), and a task's request to it through the fence succeeds; with inheritance off the
 * build fails with the TLS error in lazy's message. The CA is made with openssl here. Real
 * Docker, real Claude Code, mock provider on loopback.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HostNet, Image } from "../../src/containers";
import { cleanupAll, sh, type Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { containerProject, removeContainers, upstream } from "../helpers/fixtures";
import { TEST_IMAGES } from "../helpers/env";

const KEY = "sk-ant-api03-NETENV-" + "n".repeat(71) + "AA";
const ANSWER = `hello-from-corp-${crypto.randomUUID()}`;
let anthropic: Mock.MockProvider;
let server: ReturnType<typeof Bun.serve>;
let dir: string;
let caFile: string;
let agentImage: string;
const projects: Project[] = [];

/** A CA and a server certificate for localhost/127.0.0.1 signed by it, with openssl. */
function makeCa(d: string): void {
  const run = (cmd: string) => {
    const r = sh(d, cmd);
    if (r.code !== 0) throw new Error(`${cmd}: ${r.err}`);
  };
  run("openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj '/CN=lazy test corp CA'");
  run("openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj '/CN=localhost'");
  writeFileSync(join(d, "ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  run("openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf");
}

/** A RUN step that fetches from the server with Node (the test image has no curl) and prints the TLS error's code. */
const fetchStep = (port: number) =>
  `RUN node -e "fetch('https://127.0.0.1:${port}/').then(r => r.text()).then(t => console.log('fetched', t), e => { console.error('TLS error:', (e.cause && e.cause.code) || e.message); process.exit(1); })"`;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  dir = mkdtempSync(join(tmpdir(), "lazy-corp-ca-"));
  makeCa(dir);
  caFile = join(dir, "ca.pem");
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: readFileSync(join(dir, "srv.pem"), "utf8"), key: readFileSync(join(dir, "srv.key"), "utf8") },
    fetch: () => new Response(ANSWER),
  });
  // The task image other container tests use (lazy's default on the test base, with this host's
  // own CAs); a project Dockerfile FROM it has Claude Code. Built here when no test made it yet.
  agentImage = HostNet.apply(Image.plan(dir, { base: TEST_IMAGES.node }), HostNet.read(process.env)).tag;
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

async function corpProject(inherit: boolean): Promise<Project> {
  const port = server.port as number;
  const p = await containerProject(anthropic, KEY, {
    env: { NODE_EXTRA_CA_CERTS: caFile },
    files: (root) => writeFileSync(join(root, "Dockerfile"), `FROM ${agentImage}\n${fetchStep(port)}\n`),
  });
  projects.push(p);
  // The Dockerfile first, then lazy.toml naming it (trust approves the Dockerfile by its contents).
  p.writeToml(
    `[container]\ndockerfile = "Dockerfile"\nallow = ["127.0.0.1:${port}"]\n${inherit ? "" : "inherit_network_env = false\n"}\n${upstream(anthropic.url)}`,
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
