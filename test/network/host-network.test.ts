/**
 * The host's network setup as lazy reads it (network/host-network.ts), without Docker: which
 * connections the egress proxy chains behind the host's proxy (NO_PROXY), how a proxy URL is
 * shown, what a build's Dockerfile becomes, and the step numbers a person sees.
 */
import { describe, expect, test } from "bun:test";
import { HostNet } from "../../src/network";

describe("the host's proxy", () => {
  const env = { HTTPS_PROXY: "http://al%40corp:p%3Ass@proxy.corp:3128", NO_PROXY: "localhost,.internal.corp, 10.0.0.1:8080" };

  test("applies unless NO_PROXY names the host or its parent domain; the password is sent decoded, shown never", () => {
    const via = HostNet.proxyFor("registry.npmjs.org", env)!;
    expect(via.host).toBe("proxy.corp");
    expect(via.port).toBe(3128);
    expect(via.auth).toBe(`Basic ${Buffer.from("al@corp:p:ss").toString("base64")}`);
    expect(via.shown).toBe("http://al%40corp:***@proxy.corp:3128");
    // Written without a scheme, as many proxy settings are: still shown without its password.
    const bare = HostNet.proxyFor("registry.npmjs.org", { HTTPS_PROXY: "bob:hunter2@proxy.corp:3128" })!;
    expect(bare.shown).toBe("bob:***@proxy.corp:3128");
    expect(bare.auth).toBe(`Basic ${Buffer.from("bob:hunter2").toString("base64")}`);
    expect(HostNet.proxyFor("localhost", env)).toBeNull();
    expect(HostNet.proxyFor("git.internal.corp", env)).toBeNull();
    // "10.0.0.1:8080" is that port only (curl, Bun's fetch).
    expect(HostNet.proxyFor("10.0.0.1", env, { port: 8080, kind: "http" })).toBeNull();
    expect(HostNet.proxyFor("10.0.0.1", env, { port: 443, kind: "connect" })).not.toBeNull();
    expect(HostNet.proxyFor("10.20.30.40", { ...env, NO_PROXY: "10.0.0.0/8" })).toBeNull();
    expect(HostNet.proxyFor("11.0.0.1", { ...env, NO_PROXY: "10.0.0.0/8" })).not.toBeNull();
    expect(HostNet.proxyFor("internal.corp.evil.example", env)).not.toBeNull();
    expect(HostNet.proxyFor("anything", { ...env, NO_PROXY: "*" })).toBeNull();
    expect(HostNet.proxyFor("anything", {})).toBeNull();
  });

  test("plain HTTP takes HTTP_PROXY and a tunnel HTTPS_PROXY (lower case first), each falling back to ALL_PROXY, then the other", () => {
    const both = { HTTP_PROXY: "http://plain:1", HTTPS_PROXY: "http://tls:2" };
    expect(HostNet.proxyFor("a.test", both, { port: 80, kind: "http" })!.host).toBe("plain");
    expect(HostNet.proxyFor("a.test", both, { port: 443, kind: "connect" })!.host).toBe("tls");
    expect(HostNet.proxyFor("a.test", { ...both, http_proxy: "http://lower:3" }, { port: 80, kind: "http" })!.host).toBe("lower");
    expect(HostNet.proxyFor("a.test", { HTTPS_PROXY: "http://tls:2" }, { port: 80, kind: "http" })!.host).toBe("tls");
    expect(HostNet.proxyFor("a.test", { HTTPS_PROXY: "http://tls:2", ALL_PROXY: "http://all:4" }, { port: 80, kind: "http" })!.host).toBe(
      "all",
    );
    expect(HostNet.proxyFor("a.test", { HTTP_PROXY: "http://plain:1" }, { port: 443, kind: "connect" })!.host).toBe("plain");
  });

  test("a task container never gets a proxy URL with a password; under the fence it gets none of the host's", () => {
    const host = { ca: null, proxy: { HTTPS_PROXY: "http://u:secret@p:1", HTTP_PROXY: "http://p:1", NO_PROXY: "x" } };
    const open = HostNet.containerEnv(host, false);
    expect(open.env).toEqual({ HTTP_PROXY: "http://p:1", NO_PROXY: "x" });
    expect(open.withheld).toEqual(["HTTPS_PROXY"]);
    expect(HostNet.containerEnv(host, true).env).toEqual({});
  });
});

describe("a build with the host's CA bundle", () => {
  const file = "ARG BASE=x\nFROM $BASE AS one\nRUN a\nfrom two\nRUN b\n";

  test("the bundle and its variables follow every FROM; only NODE_EXTRA_CA_CERTS without the public roots in it", () => {
    const full = HostNet.withCa(file, { full: true });
    expect(full.match(/^COPY \.lazy-host-ca\.pem /gm)?.length).toBe(2);
    expect(full).toContain(
      `FROM $BASE AS one\nCOPY .lazy-host-ca.pem ${HostNet.CA_PATH}\nENV NODE_EXTRA_CA_CERTS=${HostNet.CA_PATH} SSL_CERT_FILE=`,
    );
    const partial = HostNet.withCa(file, { full: false });
    expect(partial).toContain(`ENV NODE_EXTRA_CA_CERTS=${HostNet.CA_PATH}\nRUN a`);
    expect(partial).not.toContain("SSL_CERT_FILE");
  });

  test("its progress keeps the person's own step numbers", () => {
    const steps = new HostNet.StepNumbers(HostNet.withCa(file, { full: true }));
    const shown = [
      "Step 1/9 : ARG BASE=x",
      "Step 2/9 : FROM $BASE AS one",
      `Step 3/9 : COPY .lazy-host-ca.pem ${HostNet.CA_PATH}`,
      `Step 4/9 : ENV NODE_EXTRA_CA_CERTS=${HostNet.CA_PATH} SSL_CERT_FILE=${HostNet.CA_PATH}`,
      "Step 5/9 : RUN a",
      " ---> abc",
      "Step 6/9 : from two",
      `Step 7/9 : COPY .lazy-host-ca.pem ${HostNet.CA_PATH}`,
      `Step 8/9 : ENV NODE_EXTRA_CA_CERTS=${HostNet.CA_PATH}`,
      "Step 9/9 : RUN b",
    ]
      .map((l) => steps.line(l))
      .filter((l) => l !== null);
    expect(shown).toEqual([
      "Step 1/5 : ARG BASE=x",
      "Step 2/5 : FROM $BASE AS one",
      "Step 3/5 : RUN a",
      " ---> abc",
      "Step 4/5 : from two",
      "Step 5/5 : RUN b",
    ]);
  });
});
