/**
 * The preflight runs a program of the image's own (its harness's `--version`) before any task
 * exists: a hostile image gets that program run by lazy. It must run sealed — no network, no
 * host folder, a read-only root, no capabilities, as the agent's uid — bounded in time and
 * output, and what it prints must reach the person's terminal inert.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needDocker, TEST_IMAGES } from "../helpers/env";
import { cleanupAll, Project, sh } from "../helpers/lazy";

const tag = (what: string) => `lazy-test-preflight/${what}:${crypto.randomUUID().slice(0, 8)}`;
const made: string[] = [];
let server: ReturnType<typeof Bun.serve> | undefined;
let hits = 0;

/** An image of the test base whose `claude` is `script` (bash). */
function hostileImage(what: string, script: string, more = ""): string {
  const t = tag(what);
  const dir = mkdtempSync(join(tmpdir(), "lazy-hostile-"));
  writeFileSync(join(dir, "claude"), `#!/bin/bash\n${script}\n`);
  chmodSync(join(dir, "claude"), 0o755);
  writeFileSync(join(dir, "Dockerfile"), `FROM ${TEST_IMAGES.debian}\nCOPY claude /usr/local/bin/claude\n${more}`);
  const r = sh(dir, `docker build -q -t ${t} .`);
  rmSync(dir, { recursive: true, force: true });
  if (r.code !== 0) throw new Error(`could not build ${t}: ${r.err}`);
  made.push(t);
  return t;
}

beforeAll(async () => {
  await needDocker();
  server = Bun.serve({
    hostname: "0.0.0.0",
    port: 0,
    fetch: () => {
      hits++;
      return new Response("reached");
    },
  });
});

afterAll(async () => {
  server?.stop(true);
  for (const t of made) sh("/", `docker rmi -f ${t}`);
  await cleanupAll();
});

/** A project on `image` with its lazy.toml trusted. */
const on = (image: string) => new Project({ toml: `[container]\nimage = "${image}"\n` });

describe("the preflight's harness check against a hostile image", () => {
  test("its --version reaches no network, no host folder, cannot write its root, and holds no capability", async () => {
    const p = new Project({ toml: "" });
    const port = server!.port;
    const image = hostileImage(
      "sealed",
      [
        "net=blocked",
        `for h in 10.213.0.1 172.17.0.1 127.0.0.1 1.1.1.1; do (exec 3<>/dev/tcp/$h/${port}) 2>/dev/null && net="OPEN-$h"; done`,
        "root=readonly; (echo x > /pwned) 2>/dev/null && root=WRITABLE",
        `host=unseen; for d in ${p.root} ${p.home}; do [ -e "$d" ] && host="SEEN-$d"; echo x > "$d/pwned" 2>/dev/null; done`,
        "caps=$(awk '/CapEff/ {print $2}' /proc/self/status)",
        'echo "probe net=$net root=$root host=$host caps=$caps uid=$(id -u)"',
        "exit 3",
      ].join("\n"),
    );
    p.writeToml(`[container]\nimage = "${image}"\n`);
    const r = await p.run(["task", "add", "hello"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("The claude harness does not run in the image");
    expect(r.stderr).toContain("exited 3");
    expect(r.stderr).toContain("probe net=blocked root=readonly host=unseen caps=0000000000000000");
    expect(r.stderr).not.toContain("uid=0");
    expect(hits).toBe(0);
    expect(existsSync(join(p.root, "pwned"))).toBe(false);
    expect(existsSync(join(p.home, "pwned"))).toBe(false);
    expect(await p.json<unknown[]>(["task", "list"])).toEqual([]);
    // Nothing of the check is left on the engine.
    expect(sh("/", `docker ps -aq --filter ancestor=${image}`).out.trim()).toBe("");
  }, 120_000);

  test("terminal escapes and megabytes of output: bounded, and shown as text, never obeyed", async () => {
    const image = hostileImage(
      "loud",
      ["head -c 5000000 /dev/zero | tr '\\0' A", "echo", "printf '\\033]0;PWNED-TITLE\\007\\033[2J\\033[31mred\\x9b31m\\n'", "exit 1"].join(
        "\n",
      ),
    );
    const p = on(image);
    const r = await p.run(["run", "hello"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("The claude harness does not run in the image");
    // The sequences arrive as text: no ESC, no C1 byte, no BEL on the terminal.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(r.stderr).not.toMatch(/[\x07\x1b\x9b]/);
    expect(r.stderr).toContain("PWNED-TITLE");
    expect(r.stderr).toMatch(/\\u001b\]0;PWNED-TITLE/);
    // Bounded: a few hundred characters of what it printed, not five megabytes.
    expect(r.stderr.length).toBeLessThan(3000);
    // --json carries it as data too (one document), with the same bound.
    const j = await p.run(["task", "add", "hello", "--json"]);
    expect(j.code).toBe(4);
    expect(j.stderr.length + j.stdout.length).toBeLessThan(4000);
    expect(await p.json<unknown[]>(["task", "list"])).toEqual([]);
  }, 120_000);

  test("a --version that never ends is killed at the bound, and the launch refused saying so", async () => {
    const image = hostileImage("stuck", "sleep 3600");
    const p = on(image);
    const r = await p.run(["task", "add", "hello"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("did not end within 20 s (killed)");
    expect(sh("/", `docker ps -aq --filter ancestor=${image}`).out.trim()).toBe("");
    expect(await p.json<unknown[]>(["task", "list"])).toEqual([]);
  }, 120_000);
  test("an image's VOLUME leaves nothing behind, and the check has one core at most", async () => {
    const dangling = () => sh("/", "docker volume ls -q --filter dangling=true").out.trim().split("\n").filter(Boolean).length;
    const image = hostileImage(
      "volume",
      [
        // cgroup v2 says "100000 100000", v1 the quota alone (its period is 100000).
        'echo "cpu=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)"',
        "head -c 4000000 /dev/zero > /data/fill && echo filled",
        "exit 2",
      ].join("\n"),
      "RUN mkdir /data && chmod 777 /data\nVOLUME /data\n",
    );
    const before = dangling();
    const p = on(image);
    const r = await p.run(["task", "add", "hello"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(/cpu=100000( 100000)?\b/);
    expect(r.stderr).toContain("filled");
    expect(dangling()).toBe(before);
    expect(sh("/", `docker ps -aq --filter ancestor=${image}`).out.trim()).toBe("");
  }, 120_000);

  test("lazy doctor runs no image a lazy.toml nobody trusted names", async () => {
    const image = hostileImage("doctor", 'echo "harness-ran-$(id -u)"; exit 3');
    const p = new Project({ toml: "" });
    // Trusted as it was written (no image named); then edited, not approved, to name the hostile one.
    writeFileSync(join(p.root, "lazy.toml"), `[container]\nimage = "${image}"\n`);
    const r = await p.run(["doctor"]);
    expect(`${r.stdout}${r.stderr}`).toContain("lazy trust");
    expect(`${r.stdout}${r.stderr}`).not.toContain("harness-ran");
    // Approved, doctor checks the harness in it as a launch would.
    await p.ok(["trust", "--yes"]);
    const after = await p.run(["doctor"]);
    expect(`${after.stdout}${after.stderr}`).toContain("harness-ran");
  }, 120_000);
});
