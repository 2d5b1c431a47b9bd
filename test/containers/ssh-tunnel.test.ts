/**
 * The ssh:// address lazy hands to the system's ssh (containers/ssh-tunnel.ts), without an
 * engine: what is refused before ssh is run, the argv ssh gets, what each of ssh's failures
 * reads as, and a docker context naming an ssh:// endpoint.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Engine } from "../../src/containers";
import * as SshTunnel from "../../src/containers/ssh-tunnel";

describe("ssh:// addresses", () => {
  test("user, host and port are read as Docker reads them", () => {
    expect(SshTunnel.parse("ssh://root@build.example.com:2222", "DOCKER_HOST")).toEqual({
      user: "root",
      host: "build.example.com",
      port: 2222,
      address: "ssh://root@build.example.com:2222",
    });
    expect(SshTunnel.parse("ssh://buildbox", "DOCKER_HOST")).toEqual({
      user: undefined,
      host: "buildbox",
      port: undefined,
      address: "ssh://buildbox",
    });
    expect(SshTunnel.parse("ssh://me@[::1]:22/", "DOCKER_HOST").host).toBe("[::1]");
  });

  test.each([
    ["ssh://-oProxyCommand=touch$IFS/tmp/x", "the host"],
    ["ssh://root@-oProxyCommand=id", "the host"],
    ["ssh://-oProxyCommand=id@host", "the user"],
    ["ssh://root@host -oProxyCommand=id", "the host"],
    ["ssh://ro ot@host", "the user"],
    ["ssh://root@host:22 -v", "the port"],
    ["ssh://root@host:0", "the port"],
    ["ssh://root@host:99999", "the port"],
    ["ssh://root@host/var/run/x.sock", "the host"],
    ["ssh://root@host\n-oX=y", "the host"],
    ["ssh://", "the host"],
  ])("%j is refused (%s), naming the form to write", (address, part) => {
    let e: Error | undefined;
    try {
      SshTunnel.parse(address, "DOCKER_HOST");
    } catch (x) {
      e = x as Error;
    }
    expect(e?.message).toContain("is not an ssh:// address lazy hands to ssh");
    expect(e?.message).toContain(part);
    expect(e?.message).toContain("ssh://[user@]host[:port]");
    expect(e?.message).not.toContain("\n");
  });

  test("ssh's argv: strict host keys, no prompt, the forward, then -- before the host", () => {
    const a = SshTunnel.argv(SshTunnel.parse("ssh://deploy@10.0.0.5:2200", "x"), "/tmp/lazy-ssh-x/docker.sock");
    const opts = a.filter((_, i) => a[i - 1] === "-o");
    expect(opts).toContain("BatchMode=yes");
    expect(opts).toContain("StrictHostKeyChecking=yes");
    expect(opts).toContain("ExitOnForwardFailure=yes");
    expect(opts).toContain("ControlPath=none");
    expect(opts.some((o) => o.startsWith("ServerAliveInterval="))).toBe(true);
    expect(a.slice(a.indexOf("-L"), a.indexOf("-L") + 2)).toEqual(["-L", "/tmp/lazy-ssh-x/docker.sock:/var/run/docker.sock"]);
    expect(a.slice(-2)).toEqual(["--", "10.0.0.5"]);
    expect(a.slice(a.indexOf("-p"), a.indexOf("-p") + 2)).toEqual(["-p", "2200"]);
    expect(a.slice(a.indexOf("-l"), a.indexOf("-l") + 2)).toEqual(["-l", "deploy"]);
  });

  test("each of ssh's failures reads as its cause and remedy", () => {
    const d = SshTunnel.parse("ssh://root@127.0.0.1:2222", "DOCKER_HOST");
    const unknown = SshTunnel.diagnose(
      d,
      "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n",
    );
    expect(unknown).toContain("127.0.0.1 port 2222");
    expect(unknown).toContain("is not known");
    expect(unknown).toContain("ssh-keyscan -p 2222 127.0.0.1");
    expect(unknown).toContain("ssh -p 2222 root@127.0.0.1");
    const changed = SshTunnel.diagnose(
      d,
      "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nHost key for [127.0.0.1]:2222 has changed and you have requested strict checking.\nHost key verification failed.\n",
    );
    expect(changed).toContain("never accepts a changed key");
    expect(changed).toContain('ssh-keygen -R "[127.0.0.1]:2222"');
    expect(SshTunnel.diagnose(d, "root@127.0.0.1: Permission denied (publickey).\n")).toContain("refused lazy's SSH login");
    expect(SshTunnel.diagnose(d, "ssh: connect to host 127.0.0.1 port 2222: Connection refused\n")).toContain("does not answer over SSH");
    expect(SshTunnel.diagnose(d, "ssh: Could not resolve hostname nowhere: Name or service not known\n")).toContain(
      "does not answer over SSH",
    );
    expect(SshTunnel.diagnose(d, "channel 2: open failed: connect failed: open failed\n")).toContain("AllowStreamLocalForwarding");
    expect(SshTunnel.diagnose(d, "something else\n")).toBeUndefined();
  });
});

test("a docker context whose endpoint is ssh:// is an ssh engine, and remote", () => {
  const dir = mkdtempSync(join(tmpdir(), "lazy-ctx-"));
  const meta = join(dir, "contexts", "meta", createHash("sha256").update("builder").digest("hex"));
  mkdirSync(meta, { recursive: true });
  writeFileSync(join(dir, "config.json"), JSON.stringify({ currentContext: "builder" }));
  writeFileSync(
    join(meta, "meta.json"),
    JSON.stringify({ Name: "builder", Endpoints: { docker: { Host: "ssh://ci@build.example.com" } } }),
  );
  const ep = Engine.resolve({ DOCKER_CONFIG: dir });
  expect(ep).toEqual({ host: "ssh://ci@build.example.com", source: "context builder" });
  expect(Engine.isSsh(ep)).toBe(true);
  expect(Engine.isRemote(ep)).toBe(true);
});

test("no ssh on PATH: the OpenSSH client is named, with how to install it", async () => {
  const empty = mkdtempSync(join(tmpdir(), "lazy-nossh-"));
  const saved = process.env.PATH;
  process.env.PATH = empty;
  try {
    const e = await SshTunnel.socketFor("ssh://root@127.0.0.1:9", "DOCKER_HOST").catch((x: Error) => x);
    expect(String((e as Error).message)).toContain("needs the OpenSSH client (ssh) on PATH");
    expect(String((e as Error).message)).toContain("apt install openssh-client");
  } finally {
    process.env.PATH = saved;
    SshTunnel.closeAll();
  }
});
