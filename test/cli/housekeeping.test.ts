/**
 * Housekeeping a person meets in the first hour (issue 37, point 11), through the compiled
 * binary: `lazy version` says what it was built from, a bad top-level flag is named, the keeper
 * and the daemon tell themselves apart in `ps`, and a project's dashboard keeps its port across
 * stops and restarts. No Docker.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pkg from "../../package.json";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";

afterAll(cleanupAll);

const REPO = resolve(import.meta.dir, "../..");
const LINE = /^lazy (\S+) \(commit (\S+), built (\S+)\)$/;

describe("lazy version", () => {
  test("says the version, the commit it was built from and when, in words and in --json", async () => {
    const p = new Project();
    const head = sh(REPO, "git rev-parse --short=12 HEAD").out.trim();
    for (const args of [["version"], ["--version"], ["-v"]]) {
      const r = await p.ok(args);
      const m = r.stdout.trim().match(LINE);
      expect(m).not.toBeNull();
      expect(m![1]).toBe(pkg.version);
      expect(m![2]).toMatch(new RegExp(`^${head}(-dirty)?$`));
      expect(Date.parse(m![3]!)).toBeGreaterThan(Date.parse("2026-01-01"));
    }
    const j = await p.json(["version"]);
    expect(j).toEqual({ version: pkg.version, commit: expect.stringMatching(new RegExp(`^${head}(-dirty)?$`)), date: expect.any(String) });
    expect(`lazy ${j.version} (commit ${j.commit}, built ${j.date})`).toBe((await p.ok(["version"])).stdout.trim());
  });

  test('a binary built outside a git checkout says "unknown" for its commit', async () => {
    // The repository's files as they are, without its .git: a source tarball.
    const dir = mkdtempSync(join(tmpdir(), "lazy-src-"));
    try {
      expect(sh(REPO, `git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - | tar -x -C ${dir}`).code).toBe(
        0,
      );
      symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
      const built = Bun.spawnSync(["bun", "build.ts", "--outfile", join(dir, "lazy")], { cwd: dir, stdout: "pipe", stderr: "pipe" });
      expect(built.stderr.toString()).toContain("commit unknown");
      expect(built.exitCode).toBe(0);
      const r = Bun.spawnSync([join(dir, "lazy"), "version"], { stdout: "pipe", env: { ...process.env, LAZY_HOME: dir } });
      const m = r.stdout.toString().trim().match(LINE);
      expect(m?.[2]).toBe("unknown");
      expect(Date.parse(m![3]!)).toBeGreaterThan(Date.parse("2026-01-01"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a bad flag before any command", () => {
  test("lazy --nope names the flag and where help is; exit 2; nothing on stdout", async () => {
    const p = new Project();
    const r = await p.run(["--nope"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim()).toBe("lazy: Unknown option --nope for lazy. See lazy --help.");
  });

  test("a near miss is suggested, and a group names itself", async () => {
    const p = new Project();
    expect((await p.run(["--verison"])).stderr).toContain("Unknown option --verison for lazy. Did you mean --version?");
    const r = await p.run(["task", "--nope=1"]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe("lazy: Unknown option --nope for lazy task. See lazy task --help.");
  });
});

/** What `ps` shows for a pid: its short name (`ps -e`, top, pgrep) and its command line (`ps aux`). */
const ps = (pid: number) => ({
  comm: sh("/", `ps -o comm= -p ${pid}`).out.trim(),
  args: sh("/", `ps -o args= -p ${pid}`).out.trim(),
});

describe("keeper and daemon in ps", () => {
  test("each names its role and its project", async () => {
    const p = new Project();
    await p.ok(["daemon", "start"]);
    const daemon = p.runtime()!.pid;
    const keeper = (JSON.parse(readFileSync(join(p.stateDir, "keeper.json"), "utf8")) as { pid: number }).pid;
    expect(ps(keeper).comm).toBe("lazy keeper");
    expect(ps(daemon).comm).toBe("lazy daemon");
    expect(ps(keeper).args).toStartWith(`lazy keeper ${p.root}`);
    expect(ps(daemon).args).toStartWith(`lazy daemon ${p.root}`);
  });

  test("a daemon the keeper starts again after a crash is named too", async () => {
    const p = new Project();
    await p.ok(["daemon", "start"]);
    const first = p.runtime()!.pid;
    process.kill(first, "SIGKILL");
    const next = await until(
      () => {
        const pid = p.runtime()?.pid;
        return pid && pid !== first ? pid : undefined;
      },
      20_000,
      "the restarted daemon",
    );
    expect(ps(next).comm).toBe("lazy daemon");
    expect(ps(next).args).toStartWith(`lazy daemon ${p.root}`);
  });
});

/** A port with 60 free ones above it, as far as a quick bind says (other suites' daemons probe from 26024). */
function freeBase(): number {
  for (;;) {
    const base = 31000 + Math.floor(Math.random() * 20000);
    const held: { stop(close?: boolean): void }[] = [];
    try {
      for (let i = 0; i < 60; i++) held.push(Bun.listen({ hostname: "127.0.0.1", port: base + i, socket: { data() {} } }));
      return base;
    } catch {
    } finally {
      for (const h of held) h.stop(true);
    }
  }
}

describe("the dashboard's port", () => {
  test("stays the project's across stops, whichever project starts first", async () => {
    // Two projects told the same first port: the first takes it, the second the next one up.
    const base = freeBase();
    const toml = `[server]\nport = ${base}\n\n[proxy]\nport = ${base + 30}\n`;
    const a = new Project({ toml });
    const b = new Project({ toml });
    await a.ok(["daemon", "start"]);
    await b.ok(["daemon", "start"]);
    const portA = a.runtime()!.api.port;
    const portB = b.runtime()!.api.port;
    expect(portA).toBe(base);
    expect(portB).toBe(base + 1);
    const proxyOf = (p: Project) => (p.runtime() as unknown as { proxy: { port: number } }).proxy;
    const proxyB = proxyOf(b);
    await a.ok(["daemon", "stop"]);
    await b.ok(["daemon", "stop"]);
    // Started the other way round, each is where its open tabs point.
    await b.ok(["daemon", "start"]);
    await a.ok(["daemon", "start"]);
    expect(b.runtime()!.api.port).toBe(portB);
    expect(a.runtime()!.api.port).toBe(portA);
    expect(proxyOf(b)).toEqual(proxyB);
    // And `lazy daemon restart` keeps it too.
    await b.ok(["daemon", "restart"]);
    expect(b.runtime()!.api.port).toBe(portB);
    expect((await b.ok(["daemon", "status"])).stdout).toContain(`http://127.0.0.1:${portB}/`);
  });

  test("a remembered port taken meanwhile is not fought for: the daemon starts on another", async () => {
    const base = freeBase();
    const p = new Project({ toml: `[server]\nport = ${base}\n\n[proxy]\nport = ${base + 30}\n` });
    await p.ok(["daemon", "start"]);
    expect(p.runtime()!.api.port).toBe(base);
    await p.ok(["daemon", "stop"]);
    const squatter = Bun.listen({ hostname: "127.0.0.1", port: base, socket: { data() {} } });
    try {
      await p.ok(["daemon", "start"]);
      expect(p.runtime()!.api.port).toBe(base + 1);
    } finally {
      squatter.stop(true);
    }
  });
});
