/**
 * Which way the model proxy's requests go to an upstream origin (proxy/upstream/way.ts), decided
 * from the daemon's environment: loopback and this host's own addresses direct whatever it says,
 * https through the host's proxy, plain http through it refused; NO_PROXY as curl reads it.
 */
import { describe, expect, test } from "bun:test";
import { decideWay } from "../../src/proxy";

const PROXY = "http://bob:secret@proxy.corp:3128";
const behind = { HTTP_PROXY: PROXY, HTTPS_PROXY: PROXY };

describe("the way to an upstream behind the host's proxy", () => {
  test("loopback (any 127/8, ::1, localhost names) is direct even with NO_PROXY empty", () => {
    for (const o of [
      "http://127.0.0.1:8080",
      "http://127.3.2.1",
      "http://[::1]:9000",
      "http://localhost:11434",
      "https://a.localhost",
      "http://[::ffff:127.0.0.1]:80",
    ])
      expect(decideWay(o, behind)).toEqual({ via: "direct", client: true });
  });

  test("this host's own non-loopback address is direct", () => {
    expect(decideWay("http://0.0.0.0:8080", behind).via).toBe("direct");
  });

  test("https goes through the proxy; plain http is refused, naming the proxy without its password", () => {
    expect(decideWay("https://api.anthropic.com", behind)).toEqual({ via: "proxy", proxy: PROXY });
    expect(decideWay("http://models.corp.example:8000", behind)).toEqual({
      via: "refused",
      host: "models.corp.example:8000",
      proxy: "http://proxy.corp:3128",
    });
  });

  test("NO_PROXY naming the host, or no proxy for the scheme, is direct", () => {
    expect(decideWay("http://models.corp.example:8000", { ...behind, NO_PROXY: ".corp.example" }).via).toBe("direct");
    expect(decideWay("http://10.1.2.3:8000", { ...behind, no_proxy: "10.0.0.0/8" }).via).toBe("direct");
    expect(decideWay("http://models.corp.example", { HTTPS_PROXY: PROXY }).via).toBe("direct");
    expect(decideWay("http://models.corp.example", { ALL_PROXY: PROXY }).via).toBe("refused");
  });
});
