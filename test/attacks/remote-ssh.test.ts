/**
 * Attacks on lazy's ssh:// engines (containers/ssh-tunnel.ts), against a real sshd in front of
 * this machine's second engine (scripts/second-engine-ssh.sh). A machine in the middle: the
 * host key is not the one known_hosts has, while an ssh-agent offers a key the server takes
 * (dockerode's own ssh transport, which accepts any host key and uses the agent, would connect;
 * docker-modem picks it from DOCKER_HOST by itself unless told otherwise). And a DOCKER_HOST or
 * docker context that smuggles ssh options into the user or host part (`-oProxyCommand=…` would
 * run a command on this host), or a space that would split into another argument. Before this
 * change lazy refused every ssh:// address with "expose it on tcp://", so each assertion on the
 * refusal's words fails there.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isAlive, type Project, sh, until } from "../helpers/lazy";
import { onSecondEngine, remoteProject, SSH_DIR, sshClient } from "../helpers/second-engine";

const KEY = `sk-ant-api03-SSHATTACK-${"t".repeat(64)}AA`;
const two = onSecondEngine({ ssh: true });
const dirs: string[] = [];
const agents: number[] = [];

afterAll(async () => {
  for (const pid of agents) {
    process.kill(pid, "SIGTERM");
    // It removes its socket as it goes: removing its folder meanwhile would race it.
    await until(() => !isAlive(pid) || undefined, 5000, "ssh-agent to end").catch(() => {});
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Nothing of the task exists: no worktree, no branch, no container on the engine, nothing sent upstream. */
function untouched(p: Project, code: string) {
  expect(existsSync(join(p.stateDir, "worktrees", code))).toBe(false);
  expect(sh(p.root, `git branch --list lazy/${code}`).out.trim()).toBe("");
  expect(two.d2(`ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
  expect(two.mock.received.filter((r) => r.method === "POST")).toEqual([]);
}

describe("a machine in the middle", () => {
  test("a host key that changed is refused, even with an agent holding a key the server accepts; known_hosts is left as it was", async () => {
    two.mock.reset();
    const c = sshClient({ ports: [two.port], known: "changed" });
    dirs.push(c.dir);
    // An agent with the real client key: any ssh that skips the host key check logs in with it.
    const sock = join(c.dir, "agent.sock");
    const a = sh(c.dir, `ssh-agent -a ${sock} -s`);
    const pid = Number(/SSH_AGENT_PID=(\d+)/.exec(a.out)?.[1]);
    expect(pid).toBeGreaterThan(0);
    agents.push(pid);
    expect(sh(c.dir, `SSH_AUTH_SOCK=${sock} ssh-add -q ${join(SSH_DIR, "client_ed25519")}`).code).toBe(0);
    const known = readFileSync(join(c.dir, "known_hosts"), "utf8");

    const p = await remoteProject(two.mock, KEY, two.projects, { host: two.host, env: { ...c.env, SSH_AUTH_SOCK: sock } });
    const r = await p.run(["run", "anything", "--code", "mitm"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("is not the one in known_hosts: lazy never accepts a changed key");
    expect(r.stderr).toContain(`ssh-keygen -R "[127.0.0.1]:${two.port}"`);
    untouched(p, "mitm");
    expect(readFileSync(join(c.dir, "known_hosts"), "utf8")).toBe(known);
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain("never accepts a changed key");
  }, 120_000);
});

describe("ssh options smuggled into DOCKER_HOST", () => {
  test("-o options in the user or host part, spaces and leading dashes are refused and run nothing: no ssh, no command", async () => {
    two.mock.reset();
    const marker = join(mkdtempSync(join(tmpdir(), "lazy-ssh-marker-")), "ran");
    dirs.push(join(marker, ".."));
    // An ssh on PATH that records that it was run at all, then runs the real one.
    const c = sshClient({ ports: [two.port], known: "real" });
    dirs.push(c.dir);
    const called = join(c.dir, "ssh-called");
    writeFileSync(join(c.dir, "bin", "ssh"), `#!/bin/sh\necho "$@" >> ${called}\nexec /usr/bin/ssh -F ${join(c.dir, "config")} "$@"\n`, {
      mode: 0o755,
    });
    const hosts = [
      `ssh://-oProxyCommand=touch${"\t"}${marker}`,
      `ssh://-oProxyCommand=touch ${marker}@127.0.0.1`,
      `ssh://root@-oProxyCommand=touch ${marker}`,
      `ssh://root@127.0.0.1 -oProxyCommand=touch ${marker}`,
      `ssh://root@127.0.0.1:${two.port} -oProxyCommand=touch ${marker}`,
      "ssh://-root@127.0.0.1",
      "ssh://ro ot@127.0.0.1",
    ];
    for (const [i, host] of hosts.entries()) {
      const p = await remoteProject(two.mock, KEY, two.projects, { host, env: c.env });
      const code = `smuggle${i}`;
      const r = await p.run(["run", "anything", "--code", code]);
      expect(r.code, `${host}: ${r.stderr}`).toBe(4);
      expect(r.stderr, host).toContain("is not an ssh:// address lazy hands to ssh");
      expect(r.stderr).toContain("ssh://[user@]host[:port]");
      untouched(p, code);
      await p.run(["daemon", "stop"]);
    }

    // The same through a docker context (DOCKER_HOST unset).
    const cfg = mkdtempSync(join(tmpdir(), "lazy-ctx-"));
    dirs.push(cfg);
    const meta = join(cfg, "contexts", "meta", createHash("sha256").update("evil").digest("hex"));
    mkdirSync(meta, { recursive: true });
    writeFileSync(join(cfg, "config.json"), JSON.stringify({ currentContext: "evil" }));
    writeFileSync(join(meta, "meta.json"), JSON.stringify({ Endpoints: { docker: { Host: `ssh://-oProxyCommand=touch ${marker}` } } }));
    const p = await remoteProject(two.mock, KEY, two.projects, { host: "", env: { ...c.env, DOCKER_CONFIG: cfg } });
    const r = await p.run(["run", "anything", "--code", "ctx"], { env: { DOCKER_HOST: undefined } });
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain("(context evil) is not an ssh:// address");
    untouched(p, "ctx");
    const doctor = await p.run(["doctor"], { env: { DOCKER_HOST: undefined } });
    expect(doctor.stdout + doctor.stderr).toContain("is not an ssh:// address");

    expect(existsSync(marker)).toBe(false);
    expect(existsSync(called)).toBe(false);
  }, 300_000);
});
