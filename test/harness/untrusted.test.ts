/**
 * What each harness adapter does with a launch in an agent-written worktree (lazy pair): the
 * switches it adds, what it names as not loaded, what it refuses, and that reading the
 * worktree follows no link. lazy chat (no untrustedCwd) keeps its launch as it was. The real
 * clients are driven in test/cli/pair.test.ts; Codex's trust rule was checked against the real
 * client (a .codex/config.toml reaches the model only when the folder is trusted).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "smol-toml";
import { loadText, resolveProfile } from "../../src/config";
import * as Harness from "../../src/harness";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function worktree(files: Record<string, string> = {}): string {
  const d = realpathSync(mkdtempSync(join(tmpdir(), "lazy-untrusted-")));
  dirs.push(d);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(d, rel, ".."), { recursive: true });
    writeFileSync(join(d, rel), content);
  }
  return d;
}

const loaded = loadText("");
if (!loaded.ok) throw new Error("an empty lazy.toml must load");
const config = loaded.config;

const launch = (harness: "claude" | "codex" | "pi" | "cursor", cwd?: string): Harness.Launch => ({
  proxyUrl: "http://127.0.0.1:9",
  envVar: "X_KEY",
  placeholder: "placeholder",
  profile: resolveProfile(config, harness),
  configDir: "/nonexistent/harness",
  untrustedCwd: cwd,
});

describe("a launch in an agent-written worktree", () => {
  test("Claude Code reads lazy's settings only and no MCP configuration; everything the worktree carries for it is named", () => {
    const wt = worktree({
      ".claude/settings.json": JSON.stringify({ hooks: {}, env: { A: "1" } }),
      ".claude/settings.local.json": "{not json",
      ".mcp.json": JSON.stringify({ mcpServers: { one: {}, "two\u001b[2J": {} } }),
      ".claude/skills/sk/SKILL.md": "x",
      ".claude/agents/ag.md": "x",
      "CLAUDE.md": "instructions load",
    });
    const p = Harness.prepare(launch("claude", wt));
    expect(p.command.slice(0, 4)).toEqual(["claude", "--setting-sources", "user", "--strict-mcp-config"]);
    expect(p.notLoaded).toEqual([
      ".claude/settings.json (hooks, env)",
      ".claude/settings.local.json (not valid JSON)",
      ".mcp.json (MCP servers: one, two?[2J)",
      ".claude/skills (sk)",
      ".claude/agents (ag.md)",
    ]);
    // lazy chat: the user's own folder, launched as before.
    expect(Harness.prepare(launch("claude")).command).not.toContain("--setting-sources");
  });

  test("Pi gets --no-extensions; a settings file naming a program, or one lazy cannot read, refuses", () => {
    const wt = worktree({
      ".pi/extensions/a.ts": "",
      ".pi/extensions/b/index.ts": "",
      ".pi/settings.json": JSON.stringify({ packages: ["npm:x"], theme: "dark" }),
    });
    const p = Harness.prepare(launch("pi", wt));
    expect(p.command).toContain("--no-extensions");
    expect(p.notLoaded).toEqual([".pi/extensions/a.ts", ".pi/extensions/b", ".pi/settings.json (packages)"]);
    expect(Harness.prepare(launch("pi")).command).not.toContain("--no-extensions");

    for (const key of ["shellPath", "shellCommandPrefix", "npmCommand"]) {
      writeFileSync(join(wt, ".pi/settings.json"), JSON.stringify({ [key]: "x" }));
      expect(() => Harness.prepare(launch("pi", wt))).toThrow(`.pi/settings.json (sets ${key}: a program Pi would run)`);
    }
    const elsewhere = worktree({ "settings.json": JSON.stringify({ shellPath: "/bin/evil" }) });
    rmSync(join(wt, ".pi/settings.json"));
    symlinkSync(join(elsewhere, "settings.json"), join(wt, ".pi/settings.json"));
    expect(() => Harness.prepare(launch("pi", wt))).toThrow(".pi/settings.json (a link: Pi reads it, and lazy cannot check what it runs)");
  });

  test("Codex's configuration marks the worktree untrusted, so it loads nothing of the worktree's .codex", () => {
    const wt = worktree({ ".codex/config.toml": 'notify = ["sh"]', ".codex/hooks.json": "{}" });
    const p = Harness.prepare(launch("codex", wt));
    const config = parse(p.files["config.toml"]!) as { projects?: Record<string, { trust_level: string }> };
    expect(config.projects?.[wt]).toEqual({ trust_level: "untrusted" });
    expect(p.notLoaded).toEqual([".codex/config.toml", ".codex/hooks.json"]);
    expect((parse(Harness.prepare(launch("codex")).files["config.toml"]!) as { projects?: unknown }).projects).toBeUndefined();
  });

  test("cursor-agent, which cannot skip a workspace's configuration, is refused while the worktree carries any, each named", () => {
    expect(Harness.prepare(launch("cursor", worktree({ ".cursor/rules/a.mdc": "rules load" }))).notLoaded).toEqual([]);
    const wt = worktree({ ".cursor/hooks.json": "{}", ".cursor/mcp.json": "{}", ".claude/settings.json": "{}" });
    expect(() => Harness.prepare(launch("cursor", wt))).toThrow(
      `cursor would load configuration from the task's worktree that lazy cannot turn off: .cursor/hooks.json; .cursor/mcp.json; .claude/settings.json. Remove it in ${wt}`,
    );
  });

  test("reading the worktree follows no link: a linked folder is named, never listed or read; Pi, which would read through it, is refused", () => {
    const outside = worktree({ "skills/secret/SKILL.md": "x", "extensions/e.ts": "" });
    const wt = worktree();
    mkdirSync(join(wt, ".claude"));
    symlinkSync(join(outside, "skills"), join(wt, ".claude/skills"));
    symlinkSync(outside, join(wt, ".pi"));
    expect(Harness.prepare(launch("claude", wt)).notLoaded).toEqual([".claude/skills (a link)"]);
    expect(() => Harness.prepare(launch("pi", wt))).toThrow(".pi/settings.json (a link: Pi reads it, and lazy cannot check what it runs)");
  });
});
