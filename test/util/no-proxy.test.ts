/**
 * NO_PROXY as lazy reads it (util/no-proxy.ts), entry by entry against what curl and Bun's fetch
 * document: which connections skip the host's proxy. The egress proxy's use of it, end to end,
 * is test/egress/chain.test.ts.
 */
import { describe, expect, test } from "bun:test";
import { bypass, listOf } from "../../src/util/no-proxy";

const direct = (host: string, port: number, list: string) => bypass(host, port, list);

describe("NO_PROXY entries", () => {
  test("a CIDR block holds every address in it, IPv4 and IPv6, and no name", () => {
    expect(direct("10.1.2.3", 80, "10.0.0.0/8")).toBe(true);
    expect(direct("10.255.255.255", 443, "10.0.0.0/8")).toBe(true);
    expect(direct("11.0.0.1", 80, "10.0.0.0/8")).toBe(false);
    expect(direct("192.168.7.9", 80, "192.168.4.0/22")).toBe(true);
    expect(direct("192.168.8.1", 80, "192.168.4.0/22")).toBe(false);
    expect(direct("172.16.0.1", 80, "0.0.0.0/0")).toBe(true);
    expect(direct("fd00::1", 80, "fd00::/8")).toBe(true);
    expect(direct("[fd12:3456::9]", 80, "fd00::/8")).toBe(true);
    expect(direct("fe80::1", 80, "fd00::/8")).toBe(false);
    // An IPv4 address written as IPv6 is the same address.
    expect(direct("::ffff:10.9.8.7", 80, "10.0.0.0/8")).toBe(true);
    // A name is never resolved to match a block.
    expect(direct("ten.example", 80, "10.0.0.0/8")).toBe(false);
    // A block that is not one matches nothing.
    expect(direct("10.1.2.3", 80, "10.0.0.0/33")).toBe(false);
  });

  test("an address matches itself, compared as an address", () => {
    expect(direct("127.0.0.1", 8080, "127.0.0.1")).toBe(true);
    expect(direct("127.0.0.2", 8080, "127.0.0.1")).toBe(false);
    expect(direct("::1", 80, "[::1]")).toBe(true);
    expect(direct("[0:0:0:0:0:0:0:1]", 80, "::1")).toBe(true);
    expect(direct("10.0.0.10", 80, "10.0.0.1")).toBe(false);
  });

  test("a name, .name and *.name match that name and the names below it, never a look-alike", () => {
    for (const e of ["corp.example", ".corp.example", "*.corp.example", "CORP.example."]) {
      expect(direct("corp.example", 443, e)).toBe(true);
      expect(direct("git.corp.example", 443, e)).toBe(true);
      expect(direct("a.b.corp.example", 443, e)).toBe(true);
      expect(direct("evilcorp.example", 443, e)).toBe(false);
      expect(direct("corp.example.evil.test", 443, e)).toBe(false);
    }
  });

  test("* alone is every host; a * elsewhere matches nothing", () => {
    expect(direct("anything.test", 443, "*")).toBe(true);
    expect(direct("10.0.0.1", 80, "foo, *")).toBe(true);
    expect(direct("a.corp.example", 443, "a*.corp.example")).toBe(false);
  });

  test("host:port matches that port only", () => {
    expect(direct("corp.example", 8080, "corp.example:8080")).toBe(true);
    expect(direct("corp.example", 443, "corp.example:8080")).toBe(false);
    expect(direct("10.0.0.1", 8080, "10.0.0.1:8080")).toBe(true);
    expect(direct("10.0.0.1", 80, "10.0.0.1:8080")).toBe(false);
    expect(direct("::1", 8080, "[::1]:8080")).toBe(true);
    expect(direct("::1", 8081, "[::1]:8080")).toBe(false);
  });

  test("entries split at commas and whitespace; no_proxy is read first, NO_PROXY when it is unset or empty", () => {
    const list = " localhost,\t.internal.corp  10.0.0.0/8 ,,";
    expect(direct("localhost", 80, list)).toBe(true);
    expect(direct("x.internal.corp", 80, list)).toBe(true);
    expect(direct("10.2.3.4", 80, list)).toBe(true);
    expect(direct("registry.npmjs.org", 443, list)).toBe(false);
    expect(direct("registry.npmjs.org", 443, "")).toBe(false);
    expect(listOf({ no_proxy: "a", NO_PROXY: "b" })).toBe("a");
    expect(listOf({ no_proxy: "", NO_PROXY: "b" })).toBe("b");
    expect(listOf({})).toBe("");
  });
});
