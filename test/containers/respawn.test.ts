/**
 * A daemon that comes back, with a real turn in flight: kill -9 of the daemon while real Claude
 * Code waits for its model's answer, and no lazy command afterwards. The keeper starts a new
 * daemon on the same gateway port; Claude Code's request in flight fails once, its own retry
 * reaches the new daemon, and the turn ends done. The comeback time is printed (the figure is
 * bench/respawn.ts's, not asserted here).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { containerProject, inFlight, settled, teardown } from "../helpers/fixtures";
import { isAlive, type Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-RESPAWNTURN-" + "r".repeat(68) + "AA";
let mock: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  mock = await Mock.anthropic();
  p = await containerProject(mock, KEY);
}, 300_000);

afterAll(() => teardown(p, mock));

describe("kill -9 of the daemon in the middle of a real Claude Code turn", () => {
  test("the turn ends done with no lazy command in between; the proxy answers again", async () => {
    // The model takes 4 s before its first byte: the request is in flight when the daemon dies.
    await inFlight(p, mock, { code: "back-one", prompt: "Say you are back", reply: "Back and done.", delayMs: 4000 });
    const before = p.runtime() as any;
    const posts = () => mock.received.filter((x) => x.method === "POST").length;
    const postsBefore = posts();

    process.kill(before.pid, "SIGKILL");
    const t0 = performance.now();
    await until(() => !isAlive(before.pid), 5000, "the daemon to die");
    // No lazy command from here on: only the daemon's files, its proxy and its API (with the token).
    const proxyUrl = `http://127.0.0.1:${before.proxy.port}`;
    await until(
      () =>
        // No credential: the proxy's own 401, never forwarded (a HEAD would reach the slow mock).
        fetch(`${proxyUrl}/v1/messages`, { method: "POST", body: "{}", signal: AbortSignal.timeout(1000) }).then(
          (r) => r.status === 401,
          () => false,
        ),
      10_000,
      "the proxy to answer again",
    ).catch((e) => {
      throw new Error(`${e.message}\n${p.log().split("\n").slice(-30).join("\n")}`);
    });
    const ms = performance.now() - t0;
    console.log(`proxy answered again ${Math.round(ms)} ms after kill -9`);
    const after = await until(
      () => {
        const r = p.runtime() as any;
        return r && r.pid !== before.pid ? r : undefined;
      },
      10_000,
      "the new daemon's record",
    );
    expect(after.pid).not.toBe(before.pid);
    expect(after.proxy.port).toBe(before.proxy.port);

    const s = await settled(p, "back-one", 300_000);
    expect(s.task.status).toBe("done");
    // The request cut by the kill, then Claude Code's own retry through the new daemon.
    expect(posts()).toBeGreaterThan(postsBefore);
    expect(mock.received.filter((x) => x.method === "POST").every((x) => x.headers["x-api-key"] === KEY)).toBe(true);
    expect(JSON.stringify(s.events)).toContain("Back and done.");
    expect(p.log()).toContain(`the daemon (pid ${before.pid}) died (signal SIGKILL); starting it again`);
    mock.reset();
  }, 600_000);
});
