/**
 * An ssh:// Docker engine (issue 28): this machine's second engine reached as
 * `ssh://root@127.0.0.1:<port>` (scripts/second-engine-ssh.sh: an sshd in that engine's mount
 * namespace with its socket over /var/run/docker.sock). lazy drives it through the system's
 * ssh, a tunnel its daemon holds; the test's ssh setup (key, known_hosts, config) is its own,
 * handed over through an `ssh` first on PATH (helpers/second-engine.ts sshClient). A real
 * Claude Code task runs there and its commit lands on the local lazy/<task>; the tunnel is gone
 * after `lazy daemon stop`, and after the daemon is killed. Each way the SSH side can fail is
 * reported before any task is touched, with its remedy, by `lazy run` and by `lazy doctor`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Engine } from "../../src/containers";
import * as SshTunnel from "../../src/containers/ssh-tunnel";
import { settled } from "../helpers/fixtures";
import { isAlive, type Project, sh, until } from "../helpers/lazy";
import { onSecondEngine, remoteImage, remoteProject, sshClient } from "../helpers/second-engine";

const KEY = `sk-ant-api03-REMOTESSH-${"s".repeat(64)}AA`;
const two = onSecondEngine({ ssh: true });
const dirs: string[] = [];

afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A project on the ssh:// engine with a client setup of `known` host keys. */
async function sshProject(known: "real" | "changed" | "none", opts: { host?: string; identity?: "other" } = {}) {
  const c = sshClient({ ports: [two.port, two.port + 1], known, identity: opts.identity });
  dirs.push(c.dir);
  const p = await remoteProject(two.mock, KEY, two.projects, { host: opts.host ?? two.host, env: c.env });
  return { p, client: c };
}

/** The daemon's ssh children that are still running (a zombie no pid 1 reaps here is not). */
function tunnels(daemonPid: number): number[] {
  return sh("/", `ps -o pid=,stat=,args= --ppid ${daemonPid}`)
    .out.split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[2] === "/usr/bin/ssh" && !f[1]!.startsWith("Z") && f.includes(`${two.port}`))
    .map((f) => Number(f[0]));
}

/** `lazy run` is refused with code 4 and `says`, and nothing of the task exists: worktree, branch, container there. */
async function refusedUntouched(p: Project, code: string, says: string[]) {
  const r = await p.run(["run", "anything", "--code", code]);
  expect(r.code, r.stderr).toBe(4);
  for (const s of says) expect(r.stderr).toContain(s);
  expect(r.stderr).toContain("No task was touched");
  expect(existsSync(join(p.stateDir, "worktrees", code))).toBe(false);
  expect(sh(p.root, `git branch --list lazy/${code}`).out.trim()).toBe("");
  expect(two.d2(`ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
  return r;
}

describe("a task on an ssh:// engine", () => {
  test("real Claude Code commits there through lazy's ssh tunnel; the commit lands on lazy/<task>; daemon stop ends the tunnel", async () => {
    const { p } = await sshProject("real");
    await remoteImage(two.tcp, p.root);
    const doctor = await p.run(["doctor"]);
    const said = doctor.stdout + doctor.stderr;
    expect(said).toContain(`${two.host} is reached through an ssh tunnel lazy holds`);
    expect(said).toContain("placeholders are not pinned");

    two.mock.reset();
    two.mock.reply = {
      text: "Committed over ssh.",
      toolUse: {
        name: "Bash",
        input: { command: "echo over-ssh > ssh.txt && git add ssh.txt && git commit -qm 'commit over ssh'", description: "commit" },
      },
    };
    await p.ok(["task", "add", "Add ssh.txt and commit it", "--code", "viassh"]);
    const started = await p.run(["start", "viassh"]);
    expect(started.code, started.stderr).toBe(0);
    const s = await settled(p, "viassh");
    expect(s.task.status, JSON.stringify(s.events.slice(-5))).toBe("done");
    expect(sh(p.root, "git log --format=%s lazy/viassh -1").out.trim()).toBe("commit over ssh");
    expect(sh(p.root, "git show lazy/viassh:ssh.txt").out.trim()).toBe("over-ssh");
    for (const r of two.mock.received.filter((x) => x.method === "POST")) expect(r.headers["x-api-key"]).toBe(KEY);

    // It ran on the second engine (seen over tcp here), not on this machine's.
    expect(two.d2(`ps -aq --filter label=dev.lazy.root=${p.root} --filter label=dev.lazy.task`).out.trim()).toMatch(/^[0-9a-f]{12}$/);
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");

    // One tunnel, the daemon's; gone with the daemon.
    const pid = p.runtime()!.pid;
    const held = tunnels(pid);
    expect(held.length).toBe(1);
    const stop = await p.run(["daemon", "stop"]);
    expect(stop.code, stop.stderr).toBe(0);
    await until(() => !isAlive(held[0]!) || undefined, 10_000, "the ssh tunnel to end with the daemon");
    expect(isAlive(pid)).toBe(false);
  }, 900_000);

  test("dockerode talks to the tunnel's local socket, never its own ssh transport (docker-modem reads DOCKER_HOST by itself)", async () => {
    const c = sshClient({ ports: [two.port], known: "real" });
    dirs.push(c.dir);
    const saved = { PATH: process.env.PATH, DOCKER_HOST: process.env.DOCKER_HOST };
    Object.assign(process.env, c.env, { DOCKER_HOST: two.host });
    try {
      const ep = Engine.resolve();
      const d = await Engine.client(ep);
      const modem = (d as unknown as { modem: { protocol: string; host?: string; socketPath?: string } }).modem;
      expect(modem.protocol).toBe("http");
      expect(modem.host).toBeUndefined();
      expect(modem.socketPath).toMatch(/\/lazy-ssh-[^/]+\/docker\.sock$/);
      expect(((await d.info()) as { DockerRootDir: string }).DockerRootDir).toBe("/var/lib/lazy-engine2");
      const pid = SshTunnel.pidOf(two.host)!;
      expect(isAlive(pid)).toBe(true);
      // One tunnel a host a process: a second client reuses it.
      await Engine.client(ep);
      expect(SshTunnel.pidOf(two.host)).toBe(pid);
      // A tunnel that dies is started again.
      process.kill(pid, "SIGKILL");
      const again = await until(
        () => {
          const now = SshTunnel.pidOf(two.host);
          return now && now !== pid && isAlive(now) ? now : undefined;
        },
        15_000,
        "a new tunnel",
      );
      expect(((await (await Engine.client(ep)).info()) as { DockerRootDir: string }).DockerRootDir).toBe("/var/lib/lazy-engine2");
      SshTunnel.closeAll();
      await until(() => !isAlive(again) || undefined, 5000, "the tunnel to close");
      expect(existsSync(modem.socketPath!)).toBe(false);
    } finally {
      SshTunnel.closeAll();
      Object.assign(process.env, saved);
      if (saved.DOCKER_HOST === undefined) delete process.env.DOCKER_HOST;
    }
  }, 120_000);

  test("a slow connection shows in the launch's progress and in doctor, then works", async () => {
    const { p, client } = await sshProject("real");
    await remoteImage(two.tcp, p.root);
    const slow = join(client.dir, "slow");
    mkdirSync(slow);
    writeFileSync(join(slow, "ssh"), `#!/bin/sh\nsleep 4\nexec ${join(client.dir, "bin", "ssh")} "$@"\n`, { mode: 0o755 });
    const env = { PATH: `${slow}:${client.env.PATH}` };
    // A daemon started with that PATH (the one setCredential started had the quick one).
    await p.ok(["daemon", "stop"]);
    two.mock.reset();
    two.mock.reply = { text: "Slowly connected." };
    const r = await p.run(["run", "say something", "--code", "slowssh"], { env });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`Connecting to the Docker engine at ${two.host}…`);
    expect((await p.ok(["logs", "slowssh"])).stdout).toContain("Slowly connected.");
    const doctor = await p.run(["doctor"], { env });
    expect(doctor.stderr).toContain(`still connecting to ${two.host} through ssh`);
    expect(doctor.stdout + doctor.stderr).toContain(`${two.host} is reached through an ssh tunnel lazy holds`);
    await p.run(["daemon", "stop"]);
  }, 300_000);

  test("a daemon killed with -9 leaves no ssh behind", async () => {
    const { p } = await sshProject("real");
    const doctor = await p.run(["doctor"]); // starts the daemon, which connects
    expect(doctor.stdout + doctor.stderr).toContain("through an ssh tunnel lazy holds");
    await p.ok(["task", "list"]);
    const pid = p.runtime()!.pid;
    // The daemon connects when it first needs the engine: housekeeping does at start.
    const held = await until(() => (tunnels(pid).length ? tunnels(pid) : undefined), 30_000, "the daemon's tunnel");
    const folders = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`lazy-ssh-${pid}-`));
    expect(folders().length).toBe(1);
    process.kill(pid, "SIGKILL");
    await until(() => !isAlive(held[0]!) || undefined, 10_000, "the ssh tunnel to end with the killed daemon");
    // Its socket folder (no exit handler ran) goes when the next tunnel is made: doctor's own.
    await p.run(["doctor"]);
    expect(folders()).toEqual([]);
    await p.run(["daemon", "stop"]);
  }, 300_000);
});

describe("what the SSH side refuses, before any task is touched", () => {
  test("an unknown host key: refused with the host, the port and how to add the key after checking it", async () => {
    const { p, client } = await sshProject("none");
    await refusedUntouched(p, "unknown", [
      two.host,
      `127.0.0.1 port ${two.port}`,
      "is not known",
      `ssh-keyscan -p ${two.port} 127.0.0.1`,
      `ssh -p ${two.port} root@127.0.0.1`,
    ]);
    // Never added behind the user's back.
    expect(readFileSync(join(client.dir, "known_hosts"), "utf8")).toBe("");
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain(`cannot reach the Docker engine at ${two.host} (DOCKER_HOST) over SSH`);
    expect(doctor.stdout + doctor.stderr).toContain("is not known (not in known_hosts)");
  }, 120_000);

  test("a login the server refuses, a host that does not answer, and an sshd that will not forward the socket: each named by run and doctor", async () => {
    const cases: { code: string; known: "real"; host?: string; identity?: "other"; says: string }[] = [
      { code: "auth", known: "real", identity: "other", says: "refused lazy's SSH login" },
      { code: "noanswer", known: "real", host: "ssh://root@127.0.0.1:9", says: "does not answer over SSH" },
      { code: "nofwd", known: "real", host: `ssh://root@127.0.0.1:${two.port + 1}`, says: "AllowStreamLocalForwarding" },
    ];
    for (const c of cases) {
      const { p } = await sshProject(c.known, { host: c.host, identity: c.identity });
      await refusedUntouched(p, c.code, [c.says]);
      const doctor = await p.run(["doctor"]);
      expect(doctor.stdout + doctor.stderr, c.code).toContain(c.says);
      await p.run(["daemon", "stop"]);
    }
  }, 300_000);
});
