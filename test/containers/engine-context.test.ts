/**
 * A docker context that names a remote engine over TLS (`docker context create --docker
 * host=tcp://…,ca=…,cert=…,key=…`): lazy reads the context's CA and client certificate from the
 * docker CLI's store and talks to that engine verified; a context whose CA does not sign the
 * engine's certificate, and one that says skip-tls-verify, are refused. The engine is this
 * machine's second one behind a TLS front that demands a client certificate signed by the test's
 * CA (the docker daemon's own --tlsverify does the same).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Engine } from "../../src/containers";
import { sh } from "../helpers/lazy";
import { secondEngine } from "../helpers/second-engine";
import { makeCa } from "../helpers/tls";

let dir: string;
let front: ReturnType<typeof Bun.serve>;
let version: string;

beforeAll(() => {
  const engine = secondEngine();
  version = sh("/", `docker -H ${engine.host} version --format '{{.Server.Version}}'`).out.trim();
  dir = mkdtempSync(join(tmpdir(), "lazy-context-tls-"));
  mkdirSync(join(dir, "ca"));
  mkdirSync(join(dir, "other"));
  makeCa(join(dir, "ca"), "lazy test engine CA");
  makeCa(join(dir, "other"), "another CA");
  // A client certificate for lazy, signed by the engine's CA.
  const r = sh(
    join(dir, "ca"),
    "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj '/CN=client' && openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2",
  );
  if (r.code !== 0) throw new Error(r.err);
  const upstream = engine.host.replace(/^tcp:/, "http:");
  front = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: {
      cert: Bun.file(join(dir, "ca", "srv.pem")),
      key: Bun.file(join(dir, "ca", "srv.key")),
      ca: Bun.file(join(dir, "ca", "ca.pem")),
      requestCert: true,
      rejectUnauthorized: true,
    },
    fetch: (req) => {
      const u = new URL(req.url);
      return fetch(`${upstream}${u.pathname}${u.search}`, { method: req.method, headers: req.headers, body: req.body });
    },
  });
});

afterAll(() => {
  front?.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** A DOCKER_CONFIG whose current context names the TLS front, with these TLS files (from folder `from`) and flags. */
function context(
  name: string,
  files: Partial<Record<"ca.pem" | "cert.pem" | "key.pem", string>>,
  skipVerify = false,
): Record<string, string> {
  const config = mkdtempSync(join(dir, "docker-config-"));
  const id = createHash("sha256").update(name).digest("hex");
  mkdirSync(join(config, "contexts", "meta", id), { recursive: true });
  writeFileSync(join(config, "config.json"), JSON.stringify({ currentContext: name }));
  writeFileSync(
    join(config, "contexts", "meta", id, "meta.json"),
    JSON.stringify({
      Name: name,
      Metadata: {},
      Endpoints: { docker: { Host: `tcp://127.0.0.1:${front.port}`, SkipTLSVerify: skipVerify } },
    }),
  );
  const tls = join(config, "contexts", "tls", id, "docker");
  mkdirSync(tls, { recursive: true });
  for (const [as, from] of Object.entries(files)) copyFileSync(from, join(tls, as));
  return { DOCKER_CONFIG: config };
}

const own = () => ({
  "ca.pem": join(dir, "ca", "ca.pem"),
  "cert.pem": join(dir, "ca", "client.pem"),
  "key.pem": join(dir, "ca", "client.key"),
});

describe("a docker context with TLS", () => {
  test("its CA and client certificate are used: the engine behind it answers", async () => {
    const ep = Engine.resolve(context("remote-tls", own()));
    expect(ep).toMatchObject({ host: `tcp://127.0.0.1:${front.port}`, source: "context remote-tls" });
    const ping = await Engine.ping(ep, 10_000);
    expect(ping).toEqual({ ok: true, version, os: "linux" });
    expect(Engine.isRemote(ep)).toBe(true);
  });

  test("a CA that did not sign the engine's certificate: no answer, the certificate named", async () => {
    const ping = await Engine.ping(Engine.resolve(context("wrong-ca", { ...own(), "ca.pem": join(dir, "other", "ca.pem") })), 10_000);
    expect(ping.ok).toBe(false);
    expect(ping.ok ? "" : ping.error).toMatch(/certificate|CERT/i);
  });

  test("no client certificate in the context: the engine refuses, and lazy says it did not answer", async () => {
    const ping = await Engine.ping(Engine.resolve(context("no-client", { "ca.pem": own()["ca.pem"] })), 10_000);
    expect(ping.ok).toBe(false);
  });

  test("skip-tls-verify is refused before any connection, with the remedy", async () => {
    const ep = Engine.resolve(context("skip", own(), true));
    await expect(Engine.client(ep)).rejects.toThrow(/skip-tls-verify.*docker context update/);
    const ping = await Engine.ping(ep, 10_000);
    expect(ping.ok ? "" : ping.error).toContain("lazy ships worktrees to it");
  });
});
