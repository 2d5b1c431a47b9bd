/**
 * A proxy thread that dies (an uncaught error, or the thread ending) is started again on the
 * same address, so agents keep the URL they were given; after three restarts the proxy reports
 * itself failed and its calls fail at once instead of waiting for an answer that never comes.
 * The proxy runs in this process here, so the test can reach its threads.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TCPSocketListener } from "bun";
import { Config } from "../../src/config";
import { CredentialStore } from "../../src/credentials";
import { liveKey, ModelProxy } from "../../src/proxy";
import { listeners } from "../../src/proxy/listen/shared-port";
import { open } from "../../src/store";
import * as Log from "../../src/util/log";
import { until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REAL-" + "r".repeat(80) + "AA";
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Inside = { threads: { worker: Worker }[] };

/** A proxy with `threads` threads in this process, in front of a mock Anthropic. */
async function inProcess(threads: number) {
  const mock = await Mock.anthropic();
  const dir = mkdtempSync(join(tmpdir(), "lazy-respawn-"));
  dirs.push(dir);
  const db = open(join(dir, "store.db"));
  const credentials = await CredentialStore.open({ home: dir, backend: "file" });
  await credentials.set("anthropic", KEY);
  const config = Config.parse({ proxy: { port: 0, upstreams: { anthropic: mock.url } } });
  return { mock, db, proxy: new ModelProxy(dir, db, credentials, () => config, Log.create("proxy"), threads) };
}

describe("a proxy thread that dies", () => {
  for (const count of [1, 2])
    test(`is restarted on the same port, three times, then the proxy is failed (${count} thread${count > 1 ? "s" : ""})`, async () => {
      const { mock, db, proxy } = await inProcess(count);
      try {
        await proxy.start();
        expect(proxy.state).toBe("ready");
        const { host, port } = proxy.address!;
        const launch = await proxy.mintFor({ role: "host", profile: "claude" });
        // A host grant redeems while its process (here, this test) lives.
        await proxy.holdWhile(liveKey({ taskId: null, role: "host", profile: launch.profile.name, envVar: launch.envVar })!, process.pid);
        const ask = () =>
          fetch(`http://${host}:${port}/v1/messages`, {
            method: "POST",
            headers: { "x-api-key": launch.placeholder, "content-type": "application/json" },
            body: JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
          }).then(
            (r) => r.status,
            () => 0,
          );
        expect(await ask()).toBe(200);
        const threads = (proxy as unknown as Inside).threads;

        // Three deaths, each followed by a thread listening where the dead one did.
        const deaths = [
          // A bug in the thread: a message it cannot handle throws, uncaught.
          () => threads[0]!.worker.postMessage({ type: "grants", grants: null }),
          // The thread ends without an error.
          () => threads[0]!.worker.terminate(),
          () => threads[0]!.worker.postMessage({ type: "config", config: null }),
        ];
        for (const kill of deaths) {
          const before = threads.map((t) => t.worker);
          kill();
          await until(() => threads.some((t, i) => t.worker !== before[i]), 10_000, "a new thread");
          // Back on the same port: every thread listening there again, and requests answered.
          await until(
            async () =>
              listeners(host, port) === count &&
              (await proxy.sync().then(
                () => true,
                () => false,
              )),
            10_000,
            "the new thread listening",
          );
          expect(proxy.state).toBe("ready");
          expect(proxy.address).toEqual({ host, port });
          for (let i = 0; i < 4; i++) expect(await ask()).toBe(200);
        }
        expect(mock.received.every((r) => r.headers["x-api-key"] === KEY)).toBe(true);

        // The fourth death is one too many: the proxy says so, and its calls fail at once.
        threads[0]!.worker.postMessage({ type: "grants", grants: null });
        await until(() => proxy.state === "failed", 10_000, "the proxy failed");
        expect(proxy.error).toBe(
          "a thread stopped 4 times; the last time: its thread stopped (TypeError: null is not an object (evaluating 'm.grants.map'))",
        );
        // At once: refused before the event loop turns once more (no thread is asked, nothing waited on).
        const sync = proxy.sync().then(
          () => "synced",
          (e: Error) => e.message,
        );
        expect(await Promise.race([sync, Bun.sleep(0).then(() => "still waiting")])).toBe(
          `lazy's proxy failed: ${proxy.error}; restart the daemon: lazy daemon restart.`,
        );
      } finally {
        await proxy.stop();
        db.close();
        await mock.close();
      }
    }, 60_000);

  test("whose port someone took meanwhile: the proxy is failed and says which port, rather than moving", async () => {
    const { mock, db, proxy } = await inProcess(1);
    let squatter: TCPSocketListener | undefined;
    try {
      await proxy.start();
      const { host, port } = proxy.address!;
      (proxy as unknown as Inside).threads[0]!.worker.terminate();
      // Take the port the moment the dead thread lets go of it. This loop holds the event loop,
      // so the proxy cannot start the new thread until the port is someone else's.
      const deadline = performance.now() + 5000;
      while (!squatter && performance.now() < deadline) {
        try {
          squatter = Bun.listen({ hostname: host, port, socket: { data() {} } });
        } catch {
          // still the dead thread's
        }
      }
      expect(squatter?.port).toBe(port);
      await until(() => proxy.state === "failed", 10_000, "the proxy failed");
      expect(proxy.error).toStartWith(`a restarted thread could not listen on ${host}:${port} again: ${host}:${port} is taken: `);
      // Still the address agents were given: lazy does not move them to another port quietly.
      expect(proxy.address).toEqual({ host, port });
    } finally {
      squatter?.stop(true);
      await proxy.stop();
      db.close();
      await mock.close();
    }
  }, 30_000);
});
