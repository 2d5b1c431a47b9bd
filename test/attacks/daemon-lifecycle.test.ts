/**
 * Attacks on a daemon that comes back (issue 28; daemon/keeper.ts, proxy listenFor, the service
 * file). What a hostile local process tries around a crash, and what a crash loop could become:
 *  - it binds the containers' proxy port (and the API port) in the instant the daemon dies, to
 *    answer agents in lazy's name and collect what the CLI sends: the new daemon serves nowhere
 *    else, says so, stops the turn rather than leave it to the impostor, and the CLI follows
 *    the new daemon's own record (its token never reaches the impostor);
 *  - a daemon killed as soon as it comes back, again and again: the keeper gives up after five
 *    crashes in a minute (no fork bomb), and status and doctor say why;
 *  - a project path that would write lines of its own into the service unit.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { containerProject, inFlight, keeperPid, removeContainers, settled } from "../helpers/fixtures";
import { BIN, cleanupAll, isAlive, never, Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-LIFECYCLEATTACK-" + "l".repeat(66) + "AA";
let mock: Mock.MockProvider;

beforeAll(async () => {
  mock = await Mock.anthropic();
});
afterAll(() => cleanupAll(mock));

describe("a hostile local process in the respawn gap", () => {
  let p: Project;
  afterAll(() => removeContainers(p));

  test("takes the containers' proxy port and the API port as the daemon dies: the turn is stopped, not answered by it; the token never reaches it", async () => {
    p = await containerProject(mock, KEY);
    await inFlight(p, mock, { code: "gap-one", prompt: "Wait for the model", reply: "Should never finish.", delayMs: 300_000 });
    const gateways = JSON.parse(readFileSync(join(p.stateDir, "gateway-ports.json"), "utf8")) as Record<string, number>;
    const [gwHost, gwPort] = Object.entries(gateways)[0]!;
    const before = p.runtime() as any;

    // The impostor: whatever reaches it is recorded; it never answers.
    const seen: string[] = [];
    const bind = (host: string, port: number) =>
      Bun.listen({ hostname: host, port, socket: { data: (_s, d) => void seen.push(Buffer.from(d).toString("latin1")) } });
    let gw: ReturnType<typeof bind> | undefined;
    let api: ReturnType<typeof bind> | undefined;
    process.kill(before.pid, "SIGKILL");
    // As fast as a local process can: bind in a tight loop from the kill on (bounded).
    for (const deadline = Date.now() + 3000; (!gw || !api) && Date.now() < deadline; ) {
      try {
        gw ??= bind(gwHost, gwPort);
      } catch {}
      try {
        api ??= bind(before.api.host, before.api.port);
      } catch {}
    }
    expect(gw, "the impostor got the gateway port (the keeper's hold comes after the kernel frees it)").toBeDefined();
    try {
      // The new daemon comes back by itself, elsewhere for its API, and refuses the gateway.
      const after = await until(
        () => {
          const r = p.runtime() as any;
          return r && r.pid !== before.pid && isAlive(r.pid) ? r : undefined;
        },
        10_000,
        "the new daemon",
      );
      if (api) expect(after.api.port).not.toBe(before.api.port);
      const s = await settled(p, "gap-one", 60_000).catch((e) => {
        throw new Error(`${e.message}\n${p.log().split("\n").slice(-25).join("\n")}`);
      });
      expect(s.task.status).toBe("failed");
      const error = JSON.stringify(s.events);
      expect(error).toContain(
        `Port ${gwPort} on ${gwHost}, where this project's containers reach lazy's proxy, is held by another process`,
      );
      // Its container is stopped: nothing more of the agent runs against the impostor.
      const id = sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim().split("\n")[0]!;
      expect(sh("/", `docker inspect -f '{{.State.Running}}' ${id}`).out.trim()).toBe("false");
      const status = await p.ok(["daemon", "status"]);
      expect(status.stdout).toContain(`Proxy:`);
      expect(status.stdout).toContain(`failed: port ${gwPort} on ${gwHost}`);
      const doctor = await p.run(["doctor"]);
      expect(doctor.stdout + doctor.stderr).toContain(`port ${gwPort} on ${gwHost}`);
      // The CLI found the daemon by its record: the impostor on the old API port got no token,
      // and no real key went anywhere near it.
      const all = seen.join("");
      expect(all).not.toContain(p.token());
      expect(all).not.toContain(KEY);
    } finally {
      gw?.stop(true);
      api?.stop(true);
      mock.reset();
    }
  }, 600_000);
});

describe("a crash loop", () => {
  test("a daemon killed each time it comes back: the keeper gives up after five crashes in a minute, and says why", async () => {
    const p = new Project();
    await p.ok(["task", "add", "x", "--code", "x-one"]);
    const keeper = keeperPid(p)!;
    const daemons = new Set<number>();
    // Kill whatever daemon answers, as fast as it appears, for up to 20 s or until the keeper is gone.
    for (const deadline = Date.now() + 20_000; Date.now() < deadline && isAlive(keeper); await Bun.sleep(10)) {
      const r = p.runtime();
      if (r && isAlive(r.pid) && !daemons.has(r.pid)) {
        daemons.add(r.pid);
        process.kill(r.pid, "SIGKILL");
      }
    }
    expect(isAlive(keeper)).toBe(false);
    // The first daemon and four restarts: five in all, then nothing more (no fork bomb).
    expect(daemons.size).toBe(5);
    await never(
      () => {
        const r = p.runtime();
        return r && isAlive(r.pid) ? `daemon ${r.pid}` : undefined;
      },
      1000,
      "a sixth daemon",
    );
    const r = p.runtime();
    expect(!r || !isAlive(r.pid)).toBe(true);
    const mine = sh("/", "ps -eo pid,args")
      .out.split("\n")
      .filter((l) => l.includes(BIN) && l.includes("daemon run"));
    const ofThisHome = mine.filter((l) => {
      const pid = Number(l.trim().split(" ")[0]);
      try {
        return readFileSync(`/proc/${pid}/environ`, "utf8").includes(`LAZY_HOME=${p.home}`);
      } catch {
        return false;
      }
    });
    expect(ofThisHome).toEqual([]);

    const status = await p.ok(["daemon", "status"]);
    expect(status.stdout).toMatch(
      /Daemon: {4}not running: the daemon crashed 5 times in \d+ s; last exit: signal SIGKILL; lazy stopped restarting it \(at [^)]+\); see lazy daemon logs/,
    );
    const json = await p.json(["daemon", "status"]);
    expect(json.running).toBe(false);
    expect(json.stoppedBecause).toContain("crashed 5 times");
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout).toMatch(/the daemon had stopped: the daemon crashed 5 times in \d+ s; last exit: signal SIGKILL/);
    // doctor looks and starts nothing (issue 37); the next command that needs the daemon starts
    // it again, with a fresh keeper.
    expect(doctor.stdout).toContain("daemon   not running");
    expect(!p.runtime() || !isAlive(p.runtime()!.pid)).toBe(true);
    await p.ok(["task", "list"]);
    expect(isAlive(p.runtime()!.pid)).toBe(true);
    expect(isAlive(keeperPid(p)!)).toBe(true);
  }, 120_000);
});

describe("the service file", () => {
  test("a project path that would add lines to the unit is refused; % and quotes stay literal", async () => {
    const base = realpathSync(mkdtempSync(join(tmpdir(), "lazy-unit-")));
    const evil = join(base, "x\n[Service]\nExecStartPre=touch pwned");
    mkdirSync(evil);
    sh(evil, "git init -q");
    const home = mkdtempSync(join(tmpdir(), "lazy-unit-home-"));
    const xdg = mkdtempSync(join(tmpdir(), "lazy-unit-xdg-"));
    const env = { ...process.env, LAZY_HOME: home, XDG_CONFIG_HOME: xdg } as Record<string, string>;
    const r = Bun.spawnSync([BIN, "daemon", "install", "--print"], { cwd: evil, env, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout.toString()).toBe("");
    expect(r.stderr.toString()).toContain("holds a line break or a control byte");
    expect(readdirSync(xdg)).toEqual([]);

    const odd = join(base, 'a%h"b');
    mkdirSync(odd);
    sh(odd, "git init -q");
    const ok = Bun.spawnSync([BIN, "daemon", "install", "--print"], { cwd: odd, env, stdout: "pipe", stderr: "pipe" });
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout.toString()).toContain(`WorkingDirectory="${base}/a%%h\\"b"`);
  }, 60_000);
});
