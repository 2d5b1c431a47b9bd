/**
 * The environment a harness gets on the host (lazy chat, lazy pair): behind the host's proxy,
 * lazy's own proxy on loopback is named in NO_PROXY, so the harness's requests (with their
 * placeholder) go to it directly and never to the company proxy, which could not reach it.
 */
import { describe, expect, test } from "bun:test";
import * as Harness from "../../src/harness";

const prepared = {
  command: ["claude"],
  env: { ANTHROPIC_BASE_URL: "http://127.0.0.1:26124", ANTHROPIC_API_KEY: "lazy-placeholder" },
  files: {},
};

describe("a harness on the host behind the host's proxy", () => {
  test("gets loopback added to NO_PROXY (both spellings), the host's own entries kept", () => {
    const env = Harness.environment({ HTTPS_PROXY: "http://proxy.corp:3128", no_proxy: ".corp, localhost" }, prepared);
    expect(env.NO_PROXY).toBe(".corp,localhost,127.0.0.1,::1");
    expect(env.no_proxy).toBe(env.NO_PROXY);
    expect(env.HTTPS_PROXY).toBe("http://proxy.corp:3128");
    expect(env.ANTHROPIC_BASE_URL).toBe("http://127.0.0.1:26124");
  });

  test("with no proxy set, NO_PROXY is left as it was", () => {
    const env = Harness.environment({ PATH: "/usr/bin" }, prepared);
    expect(env.NO_PROXY).toBeUndefined();
    expect(env.no_proxy).toBeUndefined();
  });
});
