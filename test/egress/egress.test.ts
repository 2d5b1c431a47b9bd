/**
 * The egress proxy's parts that need no container: the `[container] allow` grammar as lazy.toml
 * reports it (line:col), the request head it reads, and the policy's decisions, including a
 * name that leads to this host's own addresses. The proxy in a real container is
 * test/attacks/network.test.ts.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatProblem, load, parseAllow } from "../../src/config";
import { parse } from "../../src/egress/head";
import { decide, rulesOf } from "../../src/egress/policy";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function config(toml: string) {
  const d = mkdtempSync(join(tmpdir(), "lazy-egress-"));
  dirs.push(d);
  writeFileSync(join(d, "lazy.toml"), toml);
  return load(d);
}

describe("[container] allow", () => {
  test("an entry that does not parse is refused with its line and column", () => {
    const l = config('[container]\nallow = [\n  "github.com",\n  "http://evil.example/",\n  "x.org:0",\n  "*.10.0.0.1",\n]\n');
    expect(l.ok).toBe(false);
    const lines = l.ok ? [] : l.problems.map(formatProblem);
    expect(lines[0]).toStartWith('lazy.toml:4:3 container.allow[1] — expected "host", "host:port" or "*.domain"');
    expect(lines[1]).toBe('lazy.toml:5:3 container.allow[2] — port 0 in "x.org:0" is not 1-65535');
    expect(lines[2]).toStartWith("lazy.toml:6:3 container.allow[3]");
    expect(lines).toHaveLength(3);
  });

  test("network defaults to allowlist with the built-in registries; a bad mode is refused", () => {
    const ok = config("[container]\n");
    expect(ok.ok && ok.config.container.network).toBe("allowlist");
    const bad = config('[container]\nnetwork = "closed"\n');
    expect(bad.ok ? [] : bad.problems.map(formatProblem)[0]).toStartWith("lazy.toml:2:11 container.network");
  });

  test("entries: host, host:port, *.domain", () => {
    expect(parseAllow("Registry.NPMjs.org")).toEqual({ host: "registry.npmjs.org", wildcard: false, port: null });
    expect(parseAllow("example.org:8443")).toEqual({ host: "example.org", wildcard: false, port: 8443 });
    expect(parseAllow("*.example.org")).toEqual({ host: "example.org", wildcard: true, port: null });
  });
});

describe("the request head", () => {
  test("CONNECT host:port and absolute-form HTTP (rewritten to origin-form, Proxy-* dropped); anything else is refused", () => {
    expect(parse("CONNECT github.com:443 HTTP/1.1\r\nHost: github.com:443\r\n\r\n")).toMatchObject({
      kind: "connect",
      host: "github.com",
      port: 443,
    });
    const h = parse(
      "GET http://example.org:8080/a?b=1 HTTP/1.1\r\nHost: example.org:8080\r\nProxy-Authorization: x\r\nProxy-Connection: keep-alive\r\n\r\n",
    );
    expect(h).toMatchObject({ kind: "http", host: "example.org", port: 8080 });
    expect(h.kind === "http" && h.forward).toBe("GET /a?b=1 HTTP/1.1\r\nHost: example.org:8080\r\n\r\n");
    // The Host the server reads is the one the policy checked: another is refused, none is added.
    expect(parse("GET http://example.org/ HTTP/1.1\r\nHost: intranet.example\r\n\r\n")).toMatchObject({ kind: "bad", status: 403 });
    const bare = parse("GET http://example.org/ HTTP/1.0\r\n\r\n");
    expect(bare.kind === "http" && bare.forward).toBe("GET / HTTP/1.0\r\nHost: example.org\r\n\r\n");
    expect(parse("GET /local HTTP/1.1\r\n\r\n")).toMatchObject({ kind: "bad", status: 400 });
    expect(parse("GET https://example.org/ HTTP/1.1\r\n\r\n")).toMatchObject({ kind: "bad" });
    expect(parse("CONNECT [::1]:443 HTTP/1.1\r\n\r\n")).toMatchObject({ kind: "bad" });
  });

  test("a head the next proxy could read as two requests is refused: a bare LF or CR, a header line not `name:`", () => {
    // Behind the host's proxy (which may end a line at a bare LF) this would be a second request, to evil.
    const smuggled = "GET http://allowed.example/ HTTP/1.1\r\nX: a\n\nGET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n";
    expect(parse(smuggled)).toMatchObject({ kind: "bad", status: 400 });
    expect(parse("GET http://a.example/ HTTP/1.1\r\nX: a\rY: b\r\n\r\n")).toMatchObject({ kind: "bad", status: 400 });
    expect(parse("POST http://a.example/ HTTP/1.1\r\nTransfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n")).toMatchObject({
      kind: "bad",
      status: 400,
    });
    expect(parse("GET http://a.example/ HTTP/1.1\r\nX: a\r\n folded\r\n\r\n")).toMatchObject({ kind: "bad", status: 400 });
    expect(parse("GET http://a.example/ HTTP/1.1\r\nHost: a.example\r\nX-Ok: 1\r\n\r\n")).toMatchObject({ kind: "http" });
  });
});

describe("the policy", () => {
  const rules = (toml: string) => {
    const l = config(`[container]\n${toml}\n`);
    if (!l.ok) throw new Error(l.problems.map(formatProblem).join("\n"));
    return rulesOf(l.config);
  };

  test("allowlist: a listed port of an explicitly named loopback host goes through; its other ports and unlisted hosts do not", async () => {
    const r = rules('allow = ["127.0.0.1:8123"]');
    expect(await decide(r, "127.0.0.1", 8123)).toEqual({ ok: true, address: "127.0.0.1", family: 4 });
    expect(await decide(r, "127.0.0.1", 8124)).toMatchObject({ ok: false, status: 403, why: "127.0.0.1:8124 is not in [container] allow" });
    expect(await decide(r, "example.invalid", 443)).toMatchObject({
      ok: false,
      status: 403,
      remedy: 'add "example.invalid" to allow under [container] in lazy.toml',
    });
  });

  test("this host's own and link-local addresses: only an exact entry of allow reaches them, observe never does", async () => {
    // localhost resolves to 127.0.0.1 without DNS (/etc/hosts).
    expect(await decide(rules('allow = ["*.localhost", "localhost:9"]'), "localhost", 9)).toMatchObject({ ok: true });
    expect(await decide(rules('network = "observe"'), "localhost", 9)).toMatchObject({ ok: false, status: 403 });
    expect(await decide(rules('network = "observe"'), "127.0.0.1", 9)).toMatchObject({ ok: false, status: 403 });
    expect(await decide(rules('network = "observe"'), "169.254.169.254", 80)).toMatchObject({ ok: false, status: 403 });
  });

  test("observe never reaches an address of this host, a bridge with no container included", async () => {
    const r = rules('network = "observe"');
    const own = Bun.spawnSync(["sh", "-c", "ip -4 -o addr | awk '{print $4}' | cut -d/ -f1"]).stdout.toString().split("\n").filter(Boolean);
    expect(own.length).toBeGreaterThan(1);
    for (const a of own) expect(await decide(r, a, 9), a).toMatchObject({ ok: false, status: 403 });
  });

  test("allow_defaults = false drops the built-in list", async () => {
    expect(await decide(rules("allow_defaults = false"), "registry.npmjs.org", 443)).toMatchObject({ ok: false, status: 403 });
    expect(await decide(rules("allow_defaults = false"), "registry.npmjs.org", 8443)).toMatchObject({ ok: false, status: 403 });
  });
});
