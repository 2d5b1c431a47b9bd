import { afterAll, describe, expect, test } from "bun:test";
import pkg from "../../package.json";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

describe("the compiled CLI", () => {
  test("--version prints the package version", async () => {
    const p = new Project();
    const r = await p.ok(["--version"]);
    expect(r.stdout.trim()).toStartWith(`lazy ${pkg.version} (commit `);
  });

  test("an unknown flag is an error, one sentence on stderr, non-zero exit", async () => {
    const p = new Project();
    const r = await p.run(["task", "list", "--frobnicate"]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("Unknown option --frobnicate");
  });

  test("an unknown command names the ones that exist", async () => {
    const p = new Project();
    const r = await p.run(["tsak"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('Unknown command "tsak"');
    expect(r.stderr).toContain("task");
  });

  test("--help after -- is not lazy's", async () => {
    const p = new Project();
    // The words after -- belong to a harness; lazy must not print its own help for them.
    const r = await p.run(["task", "list", "--", "--help"]);
    expect(r.stdout).not.toContain("USAGE");
  });

  test("task add | list | show, with --json machine-clean on stdout", async () => {
    const p = new Project();
    const added = await p.json(["task", "add", "Fix the login form\nIt rejects valid emails.", "--code", "fix-login"]);
    expect(added.id).toMatch(/^[0-9a-f]{8}$/);
    expect(added).toMatchObject({ code: "fix-login", title: "Fix the login form", status: "queued", profile: "claude" });

    const other = await p.json(["task", "add", "Second task", "--code", "fix-login-2", "--profile", "codex"]);
    const list = await p.json<any[]>(["task", "list"]);
    expect(list.map((t) => t.id)).toEqual([added.id, other.id]);

    // A code matches exactly: fix-login never matches fix-login-2.
    const shown = await p.json(["task", "show", "fix-login"]);
    expect(shown.task.id).toBe(added.id);
    expect(shown.events[0].kind).toBe("created");
    // A hex prefix of at least 4 characters.
    expect((await p.json(["task", "show", other.id.slice(0, 4)])).task.code).toBe("fix-login-2");
    const short = await p.run(["task", "show", other.id.slice(0, 3)]);
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain("at least 4");
    const partial = await p.run(["task", "show", "fix-log"]);
    expect(partial.code).not.toBe(0);
    expect(partial.stderr).toContain('No task "fix-log"');

    const human = await p.ok(["task", "list"]);
    expect(human.stdout).toContain("fix-login-2");
    expect(human.stdout).toMatch(/ID\s+CODE\s+STATUS\s+PROFILE\s+TITLE/);
  });

  test("bad task input gets a clear error and adds nothing", async () => {
    const p = new Project();
    await p.ok(["task", "add", "first", "--code", "dup-code"]);
    const dup = await p.run(["task", "add", "second", "--code", "dup-code"]);
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toContain('code "dup-code" already exists');
    const hexy = await p.run(["task", "add", "x", "--code", "beef"]);
    expect(hexy.stderr).toContain("looks like a hex task id");
    const profile = await p.run(["task", "add", "x", "--profile", "nope"]);
    expect(profile.code).not.toBe(0);
    expect(profile.stderr).toContain('No profile "nope"');
    expect(profile.stderr).toContain("claude, codex, cursor, pi");
    expect(await p.json<any[]>(["task", "list"])).toHaveLength(1);
  });

  test("lazy init writes a commented starter that loads, and refuses to overwrite it", async () => {
    const p = new Project();
    await p.ok(["init"]);
    const text = await Bun.file(`${p.root}/lazy.toml`).text();
    expect(text).toContain("# [server]");
    expect(text).toContain("# port = 26024");
    const again = await p.run(["init"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("already exists");
    const status = await p.ok(["daemon", "start"]);
    expect(status.stdout).toContain("Config:    ok (lazy.toml");
  });
});
