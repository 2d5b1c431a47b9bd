/**
 * A daemon that comes back (daemon/keeper.ts): killed with -9 it answers again with no lazy
 * command typed, on the same ports, with its tasks, grants and readings; `lazy daemon stop`
 * leaves neither it nor its keeper; `lazy daemon install` where no systemd user session runs
 * says so and changes nothing, and with one (a stand-in systemctl) writes the unit and starts
 * the daemon under it. No Docker needed: the proxy's loopback side and a mock provider.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keeperPid, upstream } from "../helpers/fixtures";
import { BIN, cleanupAll, isAlive, never, Project, storedReadings, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-KEEPERTEST-" + "k".repeat(68) + "AA";
let mock: Mock.MockProvider;

beforeAll(async () => {
  mock = await Mock.anthropic();
});
afterAll(() => cleanupAll(mock));

/** A daemon other than `old` answering, found with no lazy command: its record, then its API. */
async function cameBack(p: Project, old: number): Promise<{ pid: number; ms: number }> {
  const t0 = performance.now();
  const rt = await until(
    async () => {
      const r = p.runtime();
      if (!r || r.pid === old || !isAlive(r.pid)) return undefined;
      const res = await fetch(`http://127.0.0.1:${r.api.port}/api/health`, { headers: { authorization: `Bearer ${p.token()}` } }).catch(
        () => undefined,
      );
      return res?.ok && res.headers.get("x-lazy-pid") === String(r.pid) ? r : undefined;
    },
    10_000,
    "a new daemon to answer",
  );
  return { pid: rt.pid, ms: performance.now() - t0 };
}

describe("the keeper", () => {
  test("kill -9: the daemon answers again with no lazy command, on the same ports, with its tasks, grant and readings", async () => {
    const p = new Project({ toml: upstream(mock.url) });
    await p.setCredential("anthropic", KEY);
    for (const code of ["one-a", "two-b"]) await p.ok(["task", "add", `task ${code}`, "--code", code]);
    const g = await p.grant({ role: "host" });
    mock.reset();
    mock.rateLimitHeaders = { "anthropic-ratelimit-unified-5h-utilization": "0.42" };
    const first = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ stream: false, messages: [] }),
    });
    expect(first.status).toBe(200);
    mock.rateLimitHeaders = {};
    await until(() => storedReadings(p).includes("0.42"), 10_000, "the reading in the store");
    const before = p.runtime() as any;
    const keeper = keeperPid(p)!;
    expect(isAlive(keeper)).toBe(true);

    process.kill(before.pid, "SIGKILL");
    const back = await cameBack(p, before.pid);
    console.log(`daemon back after kill -9 in ${Math.round(back.ms)} ms`);
    const after = p.runtime() as any;
    expect(after.api.port).toBe(before.api.port);
    expect(after.proxy!.port).toBe(before.proxy!.port);
    expect(keeperPid(p)).toBe(keeper);

    // The host grant minted before the crash still redeems, at the address it was given.
    const again = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ stream: false, messages: [] }),
    });
    expect(again.status).toBe(200);
    expect(mock.received.at(-1)!.headers["x-api-key"]).toBe(KEY);
    expect((await p.json<any[]>(["task", "list"])).map((t) => t.code)).toEqual(["one-a", "two-b"]);
    const limits = await p.json(["stats", "limits"]);
    expect(
      limits.limits.find((l: any) => l.owner === "credential:ANTHROPIC_API_KEY").windows.find((w: any) => w.name === "five_hour")
        .usedPercent,
    ).toBe(42);
    const status = (await p.ok(["daemon", "status"])).stdout;
    expect(status).toContain("Crashes:   1 in the last minute, each restarted by lazy; last exit: signal SIGKILL");
    expect(p.log()).toContain(`the daemon (pid ${before.pid}) died (signal SIGKILL); starting it again`);
  }, 60_000);

  test("lazy daemon stop leaves neither the daemon nor its keeper; restart keeps a keeper", async () => {
    const p = new Project();
    await p.ok(["task", "add", "x", "--code", "x-one"]);
    const d1 = p.runtime()!.pid;
    const k1 = keeperPid(p)!;
    await p.ok(["daemon", "restart"]);
    const k2 = keeperPid(p)!;
    expect(isAlive(d1)).toBe(false);
    expect(isAlive(k1)).toBe(false);
    expect(isAlive(k2)).toBe(true);
    const d2 = p.runtime()!.pid;
    const r = await p.ok(["daemon", "stop"]);
    expect(r.stdout).toContain(`Stopped the daemon (pid ${d2})`);
    expect(isAlive(d2)).toBe(false);
    expect(isAlive(k2)).toBe(false);
    expect(existsSync(join(p.stateDir, "keeper.json"))).toBe(false);
    // And nothing comes back by itself.
    await never(() => p.runtime(), 1500, "a daemon back by itself");
    expect(p.runtime()).toBeUndefined();
  }, 60_000);
});

describe("lazy daemon install", () => {
  test("with no systemd user session: says so and changes nothing", async () => {
    const p = new Project();
    await p.ok(["task", "add", "x", "--code", "x-one"]);
    const pid = p.runtime()!.pid;
    const xdg = mkdtempSync(join(tmpdir(), "lazy-xdg-"));
    // An empty PATH but for what lazy itself needs: no systemctl, or one with no session (this machine).
    const r = await p.run(["daemon", "install"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /lazy daemon install needs a systemd user session, and (systemctl is not on PATH|systemctl --user has no user session)/,
    );
    expect(r.stderr).toContain("nothing was changed");
    expect(readdirSync(xdg)).toEqual([]);
    expect(p.runtime()!.pid).toBe(pid);
    const u = await p.run(["daemon", "uninstall"], { env: { XDG_CONFIG_HOME: xdg } });
    expect(u.code).toBe(0);
    expect(u.stderr).toContain("No lazy service is installed for this project");
  }, 60_000);

  test("with a user session (a stand-in systemctl): the unit is written 0644 with no secret, enabled; uninstall removes it", async () => {
    const p = new Project({ toml: upstream(mock.url) });
    await p.setCredential("anthropic", KEY);
    const xdg = mkdtempSync(join(tmpdir(), "lazy-xdg-"));
    const bin = join(xdg, "..", `${xdg.split("/").at(-1)}-bin`);
    mkdirSync(bin);
    const calls = join(bin, "calls");
    // Records what it was asked; "enable --now" starts the daemon as systemd would run ExecStart.
    writeFileSync(
      join(bin, "systemctl"),
      `#!/bin/sh\necho "$*" >> ${calls}\ncase "$*" in\n  *"enable --now"*) "${BIN}" daemon start >/dev/null 2>&1 ;;\n  *"disable --now"*) "${BIN}" daemon stop >/dev/null 2>&1 ;;\nesac\nexit 0\n`,
    );
    chmodSync(join(bin, "systemctl"), 0o755);
    const env = { XDG_CONFIG_HOME: xdg, PATH: `${bin}:${process.env.PATH}` };
    const printed = await p.ok(["daemon", "install", "--print"], { env });
    expect(existsSync(calls)).toBe(false);
    expect(readdirSync(xdg)).toEqual([]);

    const r = await p.ok(["daemon", "install"], { env });
    const slug = p.stateDir.split("/").at(-1)!;
    const unit = join(xdg, "systemd", "user", `lazy-${slug}.service`);
    expect(r.stdout).toContain(`Installed lazy-${slug}.service (${unit})`);
    expect(statSync(unit).mode & 0o777).toBe(0o644);
    const text = readFileSync(unit, "utf8");
    expect(text).toBe(`${printed.stdout}`);
    expect(text).toContain(`WorkingDirectory="${p.root}"`);
    expect(text).toContain(`ExecStart="${BIN}" "daemon" "run"`);
    expect(text).toContain(`Environment="LAZY_HOME=${p.home}"`);
    expect(text).toContain("Restart=on-abnormal");
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(p.token());
    expect(readFileSync(calls, "utf8").split("\n").filter(Boolean)).toEqual([
      "--user show-environment",
      "--user daemon-reload",
      `--user enable --now lazy-${slug}.service`,
    ]);
    expect(isAlive(p.runtime()!.pid)).toBe(true);

    const u = await p.ok(["daemon", "uninstall"], { env });
    expect(u.stdout).toContain(`Removed lazy-${slug}.service`);
    expect(existsSync(unit)).toBe(false);
    expect(readFileSync(calls, "utf8")).toContain(`--user disable --now lazy-${slug}.service`);
  }, 60_000);
});
