/**
 * The broker's CA and leaf certificates, judged by the clients that will meet them: openssl's
 * verifier, node's X509Certificate, and a real TLS server (Bun.serve on loopback) reached by
 * Bun's fetch, curl and git with the CA and without it. A 404 from the server shows the TLS
 * handshake passed; without the CA each client must name the certificate. Also the CA's files:
 * made once with private modes, reused, and made anew when they cannot be trusted.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureCa, leaf } from "../../src/broker/ca";
import { LazyError } from "../../src/util/errors";

const DNS = "git.lazy.test";
const WILD = "pkgs.x.test"; // covered only by the *.x.test SAN
const HOSTS = [`${DNS}:8443`, "*.x.test", "127.0.0.1", "[::1]:443"];

let home: string;
let caDir: string;
let ca: ReturnType<typeof ensureCa>;
let cert: ReturnType<typeof leaf>;
let server: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "lazy-ca-"));
  caDir = join(home, "state", "broker");
  ca = ensureCa(caDir);
  cert = leaf(ca, HOSTS);
  writeFileSync(join(home, "leaf.pem"), cert.cert);
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: cert.cert, key: cert.key },
    fetch: () => new Response("no such repository", { status: 404 }),
  });
});

afterAll(() => {
  server?.stop(true);
  rmSync(home, { recursive: true, force: true });
});

/** Asynchronous, so the TLS server in this process can answer while the client runs. */
async function run(argv: string[], env: Record<string, string> = {}) {
  // A clean environment: no proxy, no user git config, nothing that turns verification off.
  const p = Bun.spawn(argv, {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home, GIT_CONFIG_NOSYSTEM: "1", GIT_TERMINAL_PROMPT: "0", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

describe("the CA's files", () => {
  test("made once in a 0700 folder, the key 0600, reused after", async () => {
    expect(statSync(caDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(caDir, "ca-key.pem")).mode & 0o777).toBe(0o600);
    expect(statSync(join(caDir, "ca.pem")).mode & 0o777).toBe(0o644);
    expect(ca.made).toBe("missing");
    expect(ca.hash).toMatch(/^[0-9a-f]{12}$/);
    const again = ensureCa(caDir);
    expect(again.made).toBeUndefined();
    expect(again.hash).toBe(ca.hash);
    expect(again.cert).toBe(ca.cert);
  });

  test("the CA is a CA for ten years, named for lazy", async () => {
    const x = new X509Certificate(ca.cert);
    expect(x.ca).toBe(true);
    expect(x.subject).toContain("O=lazy");
    expect(x.subject).toMatch(/CN=lazy broker CA [0-9a-f]{8}/);
    const years = (new Date(x.validTo).getTime() - Date.now()) / (365.25 * 86_400_000);
    expect(years).toBeGreaterThan(9.9);
    expect(years).toBeLessThan(10.1);
    const text = (await run(["openssl", "x509", "-in", join(caDir, "ca.pem"), "-noout", "-text"])).out;
    expect(text).toMatch(/Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(text).toMatch(/Key Usage: critical\s+Certificate Sign, CRL Sign/);
    expect(text).toContain("Subject Key Identifier");
  });

  test("a key readable by others, a foreign-writable cert, a broken cert, a mismatched key: made anew, and said why", async () => {
    const dir = join(home, "remade");
    const first = ensureCa(dir);
    chmodSync(join(dir, "ca-key.pem"), 0o644);
    const a = ensureCa(dir);
    expect(a.made).toContain("mode 644");
    expect(a.hash).not.toBe(first.hash);
    expect(statSync(join(dir, "ca-key.pem")).mode & 0o777).toBe(0o600);

    chmodSync(join(dir, "ca.pem"), 0o666);
    const b = ensureCa(dir);
    expect(b.made).toContain("writable by other users");
    expect(statSync(join(dir, "ca.pem")).mode & 0o777).toBe(0o644);

    writeFileSync(join(dir, "ca.pem"), "-----BEGIN CERTIFICATE-----\nnot a cert\n-----END CERTIFICATE-----\n");
    const c = ensureCa(dir);
    expect(c.made).toContain("does not parse");

    // Another CA's key beside this cert.
    const other = ensureCa(join(home, "other"));
    writeFileSync(join(dir, "ca-key.pem"), other.key, { mode: 0o600 });
    const d = ensureCa(dir);
    expect(d.made).toContain("does not match");
    expect(new X509Certificate(d.cert).checkPrivateKey(createPrivateKey(d.key))).toBe(true);
  });

  test("a CA within 60 days of its end is made anew before a leaf could outlive it", () => {
    const dir = join(home, "ageing");
    const first = ensureCa(dir);
    const later = new Date(Date.now() + (10 * 365 - 50) * 86_400_000);
    const renewed = ensureCa(dir, later);
    expect(renewed.made).toContain("ca.pem ends on");
    expect(renewed.hash).not.toBe(first.hash);
    expect(ensureCa(dir, later).made).toBeUndefined();
  });

  test("four processes making the CA at once end with one pair that all return", async () => {
    const dir = join(home, "race");
    // Each waits for the same instant, so their makes overlap (without the lock they mix pairs).
    const at = Date.now() + 1500;
    const script = [
      `const { ensureCa } = await import(${JSON.stringify(join(import.meta.dir, "../../src/broker/ca.ts"))});`,
      `while (Date.now() < ${at});`,
      `console.log(ensureCa(${JSON.stringify(dir)}).hash);`,
    ].join("\n");
    const runs = [0, 1, 2, 3].map(() => run([process.execPath, "-e", script]));
    const hashes = (await Promise.all(runs)).map((r) => r.out.trim());
    expect(hashes[0]).toMatch(/^[0-9a-f]{12}$/);
    expect(new Set(hashes).size).toBe(1);
    const final = ensureCa(dir);
    expect(final.made).toBeUndefined();
    expect(final.hash).toBe(hashes[0] ?? "");
  });
});

describe("a leaf", () => {
  test("openssl verifies it against the CA, for each name and not for others", async () => {
    const ok = await run([
      "openssl",
      "verify",
      "-x509_strict",
      "-purpose",
      "sslserver",
      "-CAfile",
      join(caDir, "ca.pem"),
      join(home, "leaf.pem"),
    ]);
    expect(ok.out.trim()).toBe(`${join(home, "leaf.pem")}: OK`);
    for (const name of [DNS, WILD]) {
      const v = await run(["openssl", "verify", "-verify_hostname", name, "-CAfile", join(caDir, "ca.pem"), join(home, "leaf.pem")]);
      expect(v.code).toBe(0);
    }
    // A wildcard covers one label only; another name is a mismatch.
    for (const name of ["a.b.x.test", "x.test", "github.com"]) {
      const v = await run(["openssl", "verify", "-verify_hostname", name, "-CAfile", join(caDir, "ca.pem"), join(home, "leaf.pem")]);
      expect(v.code).not.toBe(0);
      expect(v.out + v.err).toContain("hostname mismatch");
    }
  });

  test("openssl shows the SANs (ports stripped, IPs as addresses) and the server-only usages", async () => {
    const text = (await run(["openssl", "x509", "-in", join(home, "leaf.pem"), "-noout", "-text"])).out;
    expect(text).toContain(`DNS:${DNS}, DNS:*.x.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1`);
    expect(text).toMatch(/Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toMatch(/Key Usage: critical\s+Digital Signature\n/);
    expect(text).toMatch(/Extended Key Usage:\s+TLS Web Server Authentication/);
    expect(text).toContain("Authority Key Identifier");
    expect(text).toContain(`Subject: O = lazy, CN = ${DNS}`);
  });

  test("node parses it: issued by the CA, signed by its key, 30 days, a 16-byte serial", async () => {
    const x = new X509Certificate(cert.cert);
    const c = new X509Certificate(ca.cert);
    expect(x.checkIssued(c)).toBe(true);
    expect(x.verify(c.publicKey)).toBe(true);
    expect(x.ca).toBe(false);
    expect(x.issuer).toBe(c.subject);
    expect(x.serialNumber).toMatch(/^[0-9A-F]{32}$/i);
    expect(new Date(x.validTo).getTime()).toBe(Math.floor(cert.notAfter.getTime() / 1000) * 1000);
    const days = (cert.notAfter.getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    expect(new Date(x.validFrom).getTime()).toBeLessThan(Date.now() - 3_000_000);
    // Two leaves never share a key or a serial.
    const y = new X509Certificate(leaf(ca, [DNS]).cert);
    expect(y.serialNumber).not.toBe(x.serialNumber);
    expect(y.publicKey.export({ format: "jwk" }).x).not.toBe(x.publicKey.export({ format: "jwk" }).x);
  });

  test("a host that is no name is refused with the pattern named", async () => {
    for (const bad of ["a b.test", "*", "*.test", "foo.*.test", "exa_mple..test", "-x.test"]) {
      let err: unknown;
      try {
        leaf(ca, [bad]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(LazyError);
      expect((err as LazyError).code).toBe("invalid_input");
      expect((err as LazyError).message).toContain(JSON.stringify(bad));
    }
    expect(() => leaf(ca, [])).toThrow("at least one host");
  });
});

describe("a real TLS server with the leaf", () => {
  const url = (name: string) => `https://${name}:${server.port}/owner/repo.git`;

  test("Bun's fetch trusts it with the CA, by DNS name, wildcard and IP", async () => {
    for (const name of [DNS, WILD]) {
      const res = await fetch(`https://127.0.0.1:${server.port}/`, { tls: { ca: ca.cert, serverName: name } });
      expect(res.status).toBe(404);
    }
    const res = await fetch(`https://127.0.0.1:${server.port}/`, { tls: { ca: ca.cert } });
    expect(res.status).toBe(404);
  });

  test("Bun's fetch refuses it without the CA, or for a name it does not carry", async () => {
    const without = await fetch(`https://127.0.0.1:${server.port}/`, { tls: { serverName: DNS } }).catch((e: Error) => e);
    expect(without).toBeInstanceOf(Error);
    expect((without as Error & { code?: string }).code).toBe("UNABLE_TO_VERIFY_LEAF_SIGNATURE");
    const other = await fetch(`https://127.0.0.1:${server.port}/`, { tls: { ca: ca.cert, serverName: "github.com" } }).catch(
      (e: Error) => e,
    );
    expect(other).toBeInstanceOf(Error);
    expect((other as Error & { code?: string }).code).toBe("ERR_TLS_CERT_ALTNAME_INVALID");
  });

  test("curl trusts it with --cacert and refuses it without", async () => {
    for (const name of [DNS, WILD]) {
      const args = [
        "curl",
        "-sS",
        "--noproxy",
        "*",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "--resolve",
        `${name}:${server.port}:127.0.0.1`,
      ];
      const ok = await run([...args, "--cacert", join(caDir, "ca.pem"), url(name)]);
      expect(ok.err).toBe("");
      expect(ok.out).toBe("404");
      // Without the CA: a file with another CA, so the system store cannot help either.
      const no = await run([...args, "--cacert", join(home, "other", "ca.pem"), url(name)]);
      expect(no.code).toBe(60);
      expect(no.err).toContain("SSL certificate problem");
    }
  });

  test("git ls-remote trusts it with GIT_SSL_CAINFO (the server's 404 comes through) and refuses it without", async () => {
    for (const name of [DNS, WILD]) {
      const argv = ["git", "-c", `http.curloptResolve=${name}:${server.port}:127.0.0.1`, "ls-remote", url(name)];
      const ok = await run(argv, { GIT_SSL_CAINFO: join(caDir, "ca.pem") });
      expect(ok.code).not.toBe(0);
      expect(ok.err).toContain(`repository '${url(name)}/' not found`);
      expect(ok.err).not.toMatch(/certificate|SSL/i);
      const no = await run(argv, { GIT_SSL_CAINFO: join(home, "other", "ca.pem") });
      expect(no.code).not.toBe(0);
      expect(no.err).toMatch(/server certificate verification failed|SSL certificate problem/);
    }
  });
});
