/**
 * A remote Docker engine (issue 28): this machine's second engine (scripts/second-engine.sh),
 * on loopback tcp and in its own mount namespace, so the host's project and state paths do not
 * exist for it. A real Claude Code task runs there with DOCKER_HOST pointing at it: its
 * worktree and lazy's binary are shipped in (no host mount at all), its commit comes back onto
 * the local lazy/<task> and `lazy accept` merges it; the container holds no real key. And what
 * is refused before any task is touched: an engine that does not answer, a remote engine with
 * no [proxy] remote_bind or whose containers cannot reach it. (ssh:// engines: remote-ssh.test.ts.)
 */
import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { basename, join } from "node:path";
import { settled } from "../helpers/fixtures";
import { isAlive, sh, until } from "../helpers/lazy";
import { onSecondEngine, remoteImage, remoteProject as sharedRemoteProject } from "../helpers/second-engine";

const KEY = `sk-ant-api03-REMOTEENGINE-${"r".repeat(64)}AA`;
const two = onSecondEngine();

const remoteProject = (opts: { bind?: boolean; host?: string } = {}) =>
  sharedRemoteProject(two.mock, KEY, two.projects, { host: opts.host ?? two.host, bind: opts.bind === false ? false : two.bind });

describe("a task on a remote engine", () => {
  test("real Claude Code commits there; the commit lands on lazy/<task>; accept merges it; no key, no host mount there", async () => {
    const p = await remoteProject();
    await remoteImage(two.host, p.root);
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain("placeholders are not pinned");
    expect(doctor.stdout + doctor.stderr).toContain(`reach the proxy at ${two.bind}`);

    two.mock.reset();
    two.mock.reply = {
      text: "Committed remote.txt.",
      toolUse: {
        name: "Bash",
        input: {
          command:
            "echo made-remotely > remote.txt && git add remote.txt && git commit -qm 'commit on the remote engine' && git log --oneline | wc -l",
          description: "commit a file",
        },
      },
    };
    // Stores a linked worktree never reads stay on this machine (Git LFS's contents, the main
    // checkout's submodules): they can be gigabytes, and would travel for every task.
    for (const [dir, file] of [
      ["lfs/objects/ab/cd", "abcd".padEnd(64, "0")],
      ["modules/vendored", "HEAD"],
    ]) {
      sh(p.root, `mkdir -p .git/${dir} && head -c 1048576 /dev/zero > .git/${dir}/${file}`);
    }
    await p.ok(["task", "add", "Add remote.txt and commit it", "--code", "far"]);
    const started = await p.run(["start", "far"]);
    expect(
      started.code,
      started.stderr +
        p
          .log()
          .split("\n")
          .filter((l) => / (ERROR|WARN) /.test(l))
          .slice(-8)
          .join("\n"),
    ).toBe(0);
    const s = await settled(p, "far");
    expect(s.task.status, JSON.stringify(s.events.slice(-5))).toBe("done");
    expect((await p.ok(["logs", "far"])).stdout).toContain("Committed remote.txt.");

    // The commit came back onto the local branch, checked, and is not on main yet.
    expect(sh(p.root, "git log --format=%s lazy/far -1").out.trim()).toBe("commit on the remote engine");
    expect(sh(p.root, "git show lazy/far:remote.txt").out.trim()).toBe("made-remotely");
    expect(sh(p.root, "git fsck --no-dangling --connectivity-only").code).toBe(0);
    // Through the proxy, with the real key at the last hop only.
    const posts = two.mock.received.filter((r) => r.method === "POST");
    expect(posts.length).toBeGreaterThanOrEqual(2);
    for (const r of posts) expect(r.headers["x-api-key"]).toBe(KEY);

    // The container ran on the second engine, not on this machine's.
    const id = two.d2(`ps -aq --filter label=dev.lazy.root=${p.root} --filter label=dev.lazy.task`).out.trim().split("\n")[0]!;
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
    const inspect = two.d2(`inspect ${id}`).out;
    const info = JSON.parse(inspect)[0];
    // No host mount: lazy's binary and the repository's objects are volumes of that engine's own (copies sent there), read-only.
    expect(info.Mounts.map((m: any) => `${m.Type} ${m.Name} ${m.Destination} ${m.RW}`).sort()).toEqual([
      expect.stringMatching(/^volume lazy-bin-[0-9a-f]{16} \/lazy\/bin false$/),
      `volume lazy-objects-${basename(p.stateDir)} /lazy/repo-objects false`,
    ]);
    expect(info.HostConfig.Binds ?? []).toEqual([]);
    expect(inspect).not.toContain(KEY);
    // Nothing in it holds the key: its files (lazy's binary aside, which holds no key) and its processes' env.
    expect(two.d2(`start ${id}`).code).toBe(0);
    const scan = two.d2(
      `exec -u 0 ${id} sh -c 'grep -rl --exclude=lazy REMOTEENGINE /lazy /tmp /etc /home /root ${p.stateDir} 2>/dev/null; cat /proc/1/environ | grep -c REMOTEENGINE; echo scanned'`,
    );
    expect(scan.out.trim(), scan.err).toBe("0\nscanned");
    expect(
      two.d2(`exec -u 0 ${id} sh -c 'ls -d ${p.root}/.git/HEAD ${p.root}/.git/lfs ${p.root}/.git/modules 2>/dev/null'`).out.trim(),
    ).toBe(`${p.root}/.git/HEAD`);
    two.d2(`stop -t 0 ${id}`);

    // A second turn resumes the same session: its transcript came back with the commit.
    two.mock.reply = { text: "Still here." };
    const before = two.mock.received.length;
    await p.ok(["send", "far", "anything else?"]);
    const again = await settled(p, "far");
    expect(again.task.status).toBe("done");
    expect(again.events.filter((e: any) => e.kind === "refused")).toEqual([]);
    const second = two.mock.received.slice(before).filter((r) => r.method === "POST");
    expect(second.length).toBeGreaterThanOrEqual(1);
    expect(second.at(-1)!.body).toContain("Committed remote.txt.");

    // lazy pair would work on the host's copy of the worktree, which a remote task does not update.
    const pair = await p.run(["pair", "far"]);
    expect(pair.code).not.toBe(0);
    expect(pair.stderr).toContain(`runs on the Docker engine at ${two.host}`);

    const acc = await p.run(["accept", "far"]);
    expect(acc.code, acc.stderr).toBe(0);
    expect(sh(p.root, "git log --format=%s main").out).toContain("commit on the remote engine");
    expect(existsSync(join(p.root, "remote.txt"))).toBe(true);
  }, 900_000);

  test("kill -9 of the daemon during a remote turn: the next daemon mirrors the turn again and it ends done", async () => {
    const p = await remoteProject();
    await remoteImage(two.host, p.root);
    two.mock.reset();
    two.mock.reply = { text: "Slow but done, remotely." };
    two.mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 4000, gapMs: 0 };
    await p.ok(["task", "add", "Be slow", "--code", "slow-far"]);
    await p.ok(["start", "slow-far"]);
    await until(() => two.mock.received.some((x) => x.method === "POST") || undefined, 120_000, "the turn's model request");
    const pid = p.runtime()!.pid;
    process.kill(pid, "SIGKILL");
    await until(() => !isAlive(pid), 5000, "the daemon to die");
    // A command (not the API) starts the next daemon, which reconciles the running task.
    const t = await until(
      async () => {
        const now = (await p.json(["task", "show", "slow-far"])).task;
        return now.status !== "running" && now.status !== "queued" ? now : undefined;
      },
      180_000,
      "the task to end after the restart",
    );
    expect(t.status).toBe("done");
    expect((await p.ok(["logs", "slow-far"])).stdout).toContain("Slow but done, remotely.");
    two.mock.reset();
  }, 300_000);

  test("an engine that does not answer is reported before the task is touched, with the remedy", async () => {
    const p = await remoteProject({ host: "tcp://127.0.0.1:9" });
    const r = await p.run(["run", "anything", "--code", "gone"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("tcp://127.0.0.1:9");
    expect(r.stderr).toContain("does not answer");
    expect(r.stderr).toContain("unset DOCKER_HOST");
    expect(existsSync(join(p.stateDir, "worktrees", "gone"))).toBe(false);
    expect(sh(p.root, "git branch --list lazy/gone").out.trim()).toBe("");
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain("cannot reach the Docker engine at tcp://127.0.0.1:9");
  }, 120_000);

  test("a remote engine with no [proxy] remote_bind is refused before the task is touched", async () => {
    const p = await remoteProject({ bind: false });
    const r = await p.run(["run", "anything", "--code", "nobind"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("Set [proxy] remote_bind");
    expect(existsSync(join(p.stateDir, "worktrees", "nobind"))).toBe(false);
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain("remote_bind is not set");
  }, 120_000);

  test("a remote engine whose containers cannot reach the proxy is refused before the task is touched", async () => {
    const p = await remoteProject();
    await remoteImage(two.host, p.root);
    // A firewall between that engine's containers and remote_bind (this host's INPUT: the second engine shares its network).
    // Its project networks come from lazy's range (network/subnets.ts, 10.213.0.0/16) or its own pool (10.214.0.0/16).
    const rule = `INPUT -s 10.213.0.0/15 -d ${two.bind} -p tcp -j REJECT --reject-with tcp-reset`;
    expect(sh("/", `iptables -I ${rule}`).code).toBe(0);
    try {
      const r = await p.run(["run", "anything", "--code", "walled"]);
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toContain(`cannot reach lazy's proxy at http://${two.bind}:`);
      expect(r.stderr).toContain("set [proxy] remote_bind");
      expect(existsSync(join(p.stateDir, "worktrees", "walled"))).toBe(false);
      expect(two.d2(`ps -aq --filter label=dev.lazy.task --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
    } finally {
      sh("/", `iptables -D ${rule}`);
    }
  }, 300_000);
});
