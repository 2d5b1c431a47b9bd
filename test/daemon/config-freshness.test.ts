/**
 * The config you see is the config that runs (issue 28, Deliver 4): the daemon re-checks
 * lazy.toml before each API request, so a launch right after an edit uses the edit, with no
 * wait for the file watch; and while lazy.toml is broken or untrusted every command that talks
 * to the daemon says so once on stderr (the path, each problem's line:col, the config in use),
 * its data on stdout untouched.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const BASE = '[models.roles]\nagent = "claude"\n';
const WITH_PROFILE = `${BASE}\n[profiles.newprofile]\nharness = "claude"\nmodel = "claude-newprofile-1"\n`;
/** Each warning once: its headline's occurrences. */
const count = (s: string, part: string) => s.split(part).length - 1;

describe("lazy.toml is checked at each request", () => {
  test("an edit, lazy trust, and at once lazy task add --profile the edit defines: it succeeds, no sleep, nothing on stderr", async () => {
    const p = new Project({ toml: BASE });
    await p.ok(["task", "add", "first"]);
    // The daemon sees the edit before the trust (the watch fires on lazy.toml); lazy trust then
    // changes only trusted.json, which before this change only a 1 s poll noticed.
    writeFileSync(join(p.root, "lazy.toml"), WITH_PROFILE);
    const early = await p.run(["task", "list"]);
    expect(early.code).toBe(0);
    expect(early.stderr).toContain("lazy.toml:5:1 profiles.newprofile.harness — added since you trusted it");
    expect(p.trust().code).toBe(0);
    const r = await p.run(["task", "add", "second", "--profile", "newprofile", "--json"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).profile).toBe("newprofile");

    // A new default role, trusted: the very next launch takes it.
    p.writeToml(WITH_PROFILE.replace('agent = "claude"', 'agent = "newprofile"'));
    expect((await p.json(["task", "add", "third"])).profile).toBe("newprofile");
  }, 60_000);

  test("a broken edit: lazy task list exits 0, the list on stdout (JSON intact), the warning with line:col once on stderr", async () => {
    const p = new Project({ toml: BASE });
    await p.ok(["task", "add", "kept", "--code", "kept"]);
    writeFileSync(join(p.root, "lazy.toml"), `${BASE}\n[proxy]\nport = -1\n`);
    const r = await p.run(["task", "list", "--json"]);
    expect(r.code).toBe(0);
    const list = JSON.parse(r.stdout);
    expect(list.map((t: { code: string }) => t.code)).toEqual(["kept"]);
    expect(r.stderr).toContain(`lazy: ${p.root}/lazy.toml is broken; the daemon keeps using the last good config (loaded `);
    expect(r.stderr).toContain("  lazy.toml:5:8 proxy.port — expected a number ≥ 0");
    expect(count(r.stderr, "is broken")).toBe(1);

    // Human output too, and a command making several requests says it once.
    const human = await p.run(["task", "list"]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain("kept");
    expect(human.stdout).not.toContain("broken");
    expect(count(human.stderr, "lazy.toml:5:8 proxy.port")).toBe(1);
    const show = await p.run(["task", "show", "kept"]);
    expect(show.code).toBe(0);
    expect(count(show.stderr, "is broken")).toBe(1);

    // Fixed: silence again, at once.
    writeFileSync(join(p.root, "lazy.toml"), BASE);
    const fixed = await p.run(["task", "list"]);
    expect(fixed.code).toBe(0);
    expect(fixed.stderr).toBe("");
  }, 60_000);

  test("an untrusted edit: commands say it is not trusted, where, and how to approve; the trusted config stays in use", async () => {
    const p = new Project({ toml: BASE });
    await p.ok(["task", "add", "kept"]);
    writeFileSync(join(p.root, "lazy.toml"), WITH_PROFILE);
    const r = await p.run(["task", "list", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toHaveLength(1);
    expect(r.stderr).toContain(`lazy: ${p.root}/lazy.toml is changed and not trusted`);
    expect(r.stderr).toContain(`run lazy trust in ${p.root}`);
    expect(r.stderr).toContain("  lazy.toml:5:1 profiles.newprofile.harness — added since you trusted it");
    expect(r.stderr).toContain("Until then the daemon keeps using the last trusted config (loaded ");
    expect(count(r.stderr, "not trusted")).toBe(1);

    // A launch by the untrusted edit's profile is refused by the trusted config, with the warning.
    const add = await p.run(["task", "add", "evil", "--profile", "newprofile"]);
    expect(add.code).not.toBe(0);
    expect(add.stderr).toContain("is changed and not trusted");
    expect(add.stderr).toMatch(/newprofile/);
    expect((await p.json(["task", "list"])).map((t: { title: string }) => t.title)).toEqual(["kept"]);

    // Approved: used at once, the warning gone.
    expect(p.trust().code).toBe(0);
    const ok = await p.run(["task", "add", "now", "--profile", "newprofile", "--json"]);
    expect(ok.stderr).toBe("");
    expect(JSON.parse(ok.stdout).profile).toBe("newprofile");
  }, 60_000);
});
