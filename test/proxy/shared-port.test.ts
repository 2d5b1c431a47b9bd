/**
 * The proxy's threads share one port (SO_REUSEPORT) without letting anyone else share it:
 * a port held by another socket is skipped, the daemon's port shows exactly its own listeners,
 * and a process that binds the same port with reusePort is never handed the proxy's traffic.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { listeners, probe, procAddress, threadCount } from "../../src/proxy/listen/shared-port";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REAL-" + "s".repeat(80) + "AA";

afterAll(async () => {
  await cleanupAll();
});

describe("claiming a port", () => {
  test("addresses are written as /proc/net/tcp{,6} writes them", () => {
    expect(procAddress("127.0.0.1")).toBe("0100007F");
    expect(procAddress("172.18.0.1")).toBe("010012AC");
    expect(procAddress("0.0.0.0")).toBe("00000000");
    expect(procAddress("::1")).toBe("00000000000000000000000001000000");
    expect(procAddress("[::]")).toBe("0".repeat(32));
  });

  test("listeners counts only LISTEN sockets on that address and port", () => {
    const tcp = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0",
      "   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0",
      "   2: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0",
      "   3: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0",
      "   4: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1 0 100 0 0 10 0",
    ].join("\n");
    const read = (p: string) => (p.endsWith("tcp") ? tcp : "  sl  local_address\n");
    expect(listeners("127.0.0.1", 8080, read)).toBe(2); // the established connection, 0.0.0.0 and :8081 do not count
    expect(listeners("0.0.0.0", 8080, read)).toBe(1);
    expect(listeners("127.0.0.1", 8082, read)).toBe(0);
  });

  test("a port held with reusePort by someone else is not free", () => {
    const free = probe("127.0.0.1", 0)!;
    expect(free).toBeGreaterThan(0);
    const squatter = Bun.serve({ hostname: "127.0.0.1", port: free, reusePort: true, fetch: () => new Response("squatter") });
    try {
      expect(probe("127.0.0.1", free)).toBeNull();
      expect(listeners("127.0.0.1", free)).toBe(1);
    } finally {
      squatter.stop(true);
    }
    expect(probe("127.0.0.1", free)).toBe(free);
  });
});

describe.if(process.platform === "linux")("a daemon's proxy on Linux", () => {
  test("runs on two threads that hold its port alone, and skips a port someone else holds with reusePort", async () => {
    expect(threadCount({})).toBe(navigator.hardwareConcurrency >= 2 ? 2 : 1);
    const mock = await Mock.anthropic();
    // Someone (another daemon, any program of this user) holds the configured port with reusePort.
    const wanted = probe("127.0.0.1", 0)!;
    let squatted = 0;
    const squatter = Bun.serve({
      hostname: "127.0.0.1",
      port: wanted,
      reusePort: true,
      fetch: () => {
        squatted++;
        return new Response("squatter");
      },
    });
    try {
      const p = new Project({ toml: `[proxy]\nport = ${wanted}\n\n[proxy.upstreams]\nanthropic = "${mock.url}"\n` });
      await p.setCredential("anthropic", KEY);
      const g = await p.grant({ role: "host", profile: "claude" });
      const port = Number(new URL(g.proxyUrl).port);
      expect(port).toBeGreaterThan(wanted);
      expect(listeners("127.0.0.1", port)).toBe(threadCount({}));
      expect(listeners("127.0.0.1", wanted)).toBe(1); // the squatter alone: nobody joined it

      // Many short connections, spread by the kernel over the threads: every one answered, all audited.
      const n = 40;
      const statuses = await Promise.all(
        Array.from({ length: n }, () =>
          fetch(`${g.proxyUrl}/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": g.placeholder, "content-type": "application/json", connection: "close" },
            body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
          }).then(async (r) => {
            await r.arrayBuffer();
            return r.status;
          }),
        ),
      );
      expect(statuses).toEqual(Array(n).fill(200));
      const audit = await p.json(["stats", "audit", "--limit", "100"]);
      expect(audit.rows.filter((r: { path: string; status: number }) => r.path === "/v1/messages" && r.status === 200).length).toBe(n);
      // Readings and health live on each thread; lazy stats shows them as one.
      const limits = await p.json(["stats", "limits"]);
      expect(limits.health.find((h: { provider: string }) => h.provider === "Anthropic")?.requests).toBe(n);
      expect(limits.limits.length).toBe(1);
      expect(squatted).toBe(0);
      expect(mock.received.length).toBe(n);
      expect(mock.received.every((r) => r.headers["x-api-key"] === KEY)).toBe(true);
    } finally {
      squatter.stop(true);
      await mock.close();
    }
  });
});
