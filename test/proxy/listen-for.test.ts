/**
 * The proxy listening for a project's containers on another address (the network's gateway on
 * Linux): callers at once — a launch, one of lazy's own calls, housekeeping — get one port, the
 * one every thread listens on. Before, each probed and bound, and the one that found its port
 * "not its own alone" unlistened the address under the others: the port they had handed to
 * containers and to the network fence then had no listener, and a container's connection went
 * nowhere. The proxy runs in this process here; the addresses are loopback ones.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Config } from "../../src/config";
import { CredentialStore } from "../../src/credentials";
import { ModelProxy } from "../../src/proxy";
import { listeners } from "../../src/proxy/listen/shared-port";
import { open } from "../../src/store";
import * as Log from "../../src/util/log";

const dir = mkdtempSync(join(tmpdir(), "lazy-listenfor-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the proxy listening for containers on another address", () => {
  test("five callers at once get one port, both threads on it and nothing else there; an address removed while being claimed is left with no listener", async () => {
    const db = open(join(dir, "store.db"));
    const credentials = await CredentialStore.open({ home: dir, backend: "file" });
    const config = Config.parse({ proxy: { port: 0 } });
    const proxy = new ModelProxy(dir, db, credentials, () => config, Log.create("proxy"), 2);
    try {
      await proxy.start();
      const host = "127.0.0.9";
      const got = await Promise.all([1, 2, 3, 4, 5].map(() => proxy.listenFor(host)));
      const port = got[0]!.port;
      expect(got.map((a) => `${a.host}:${a.port}`)).toEqual(Array(5).fill(`${host}:${port}`));
      expect(listeners(host, port)).toBe(2);
      // Every thread answers there: twenty connections, each a new one, spread by the kernel.
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`http://${host}:${port}/lazy/health-of-nothing`, { headers: { connection: "close" } });
        expect(res.status).toBeGreaterThanOrEqual(400);
      }
      for (let p = port - 3; p <= port + 3; p++) if (p !== port) expect(listeners(host, p)).toBe(0);
      // And later callers get the same port without trying again.
      expect(await proxy.listenFor(host)).toEqual({ host, port });

      // The address goes away (its network removed) while a claim is under way: the claim
      // fails, and no thread is left listening on a port nobody was told.
      const gone = "127.0.0.10";
      const claim = proxy.listenFor(gone);
      proxy.unlisten(gone);
      expect(
        await claim.then(
          () => "listening",
          (e: Error) => e.message,
        ),
      ).toContain("was removed while lazy's proxy began to listen there");
      await Bun.sleep(200);
      expect(
        Bun.spawnSync(["ss", "-Hltn", `src ${gone}`])
          .stdout.toString()
          .trim(),
      ).toBe("");
      // Asked again, it listens.
      const again = await proxy.listenFor(gone);
      expect(listeners(gone, again.port)).toBe(2);
    } finally {
      await proxy.stop();
    }
  });
});
