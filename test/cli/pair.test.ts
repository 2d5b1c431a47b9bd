/**
 * lazy pair starts a harness on the host in a task's worktree, which the task's agent wrote.
 * Code the agent planted there (a Pi extension, a Claude Code hook or MCP server, hooks in the
 * task's own harness folder) must not run on the host, the user must be told what was left
 * out, and what cannot be turned off refuses the launch. Each plant is also shown to run when
 * the same client is started plainly in that folder, so these tests fail if the plant is inert.
 *
 * Real Claude Code and Pi ($LAZY_TEST_TOOLS, see scripts/setup-test-env.sh), a mock provider on
 * loopback, and a real Docker engine to make the worktree: a setup command that fails stops
 * `lazy start` right after the worktree and container exist, so no model turn runs in it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { requireDocker, TEST_IMAGES } from "../helpers/env";
import { BIN, cleanupAll, Project, type Result } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REALPAIR-" + "p".repeat(72) + "AA";
const TOOLS_BIN = join(process.env.LAZY_TEST_TOOLS ?? "/opt/lazy-test-tools", "node_modules", ".bin");
const TURN_SECONDS = 90;

let anthropic: Mock.MockProvider;
let p: Project;
const temps: string[] = [];

const temp = (prefix: string) => {
  const d = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  temps.push(d);
  return d;
};
const sh = (cmd: string) => Bun.spawnSync(["bash", "-c", cmd], { stdout: "pipe", stderr: "pipe" }).stdout.toString();

beforeAll(async () => {
  if (!(await requireDocker()))
    throw new Error("these tests need a Docker engine (to make a task's worktree): bash scripts/setup-test-env.sh starts one");
  for (const c of ["claude", "pi"])
    if (!existsSync(join(TOOLS_BIN, c))) throw new Error(`${c} is not installed in ${TOOLS_BIN}: run bash scripts/setup-test-env.sh`);
  anthropic = await Mock.anthropic();
  p = new Project({
    toml: `[container]\nbase = "${TEST_IMAGES.node}"\nsetup = "exit 7"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`,
  });
  Bun.spawnSync(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-q", "--allow-empty", "-m", "init"], {
    cwd: p.root,
  });
  await p.setCredential("anthropic", KEY);
}, 120_000);

afterAll(async () => {
  if (p) for (const c of sh(`docker ps -aq --filter label=dev.lazy.root=${p.root}`).split("\n").filter(Boolean)) sh(`docker rm -f ${c}`);
  await cleanupAll();
  await anthropic?.close();
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A task of `profile` whose worktree exists (its first start stops at the failing setup). */
async function taskWithWorktree(code: string, profile: string): Promise<{ id: string; worktree: string; harness: string }> {
  await p.ok(["task", "add", `Pair with me (${profile})`, "--code", code, "--profile", profile]);
  const r = await p.run(["start", code]);
  expect(r.code, r.stderr).not.toBe(0);
  expect(r.stderr).toContain("setup failed");
  const id = (await p.json(["task", "show", code])).task.id as string;
  const worktree = join(p.stateDir, "worktrees", code);
  expect(existsSync(join(worktree, ".git"))).toBe(true);
  return { id, worktree, harness: join(p.stateDir, "tasks", id, "harness") };
}

/** Run a program with a fresh HOME and the clients on PATH, bounded (timeout kills the group). */
async function bounded(argv: string[], cwd: string, extra: Record<string, string> = {}): Promise<Result> {
  const home = temp("lazy-pair-home-");
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries({
    ...process.env,
    ...p.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    PATH: `${TOOLS_BIN}:${process.env.PATH}`,
    ...extra,
  }))
    if (v !== undefined) env[k] = v;
  delete env.LAZY_PROJECT;
  // Bun.spawn, never spawnSync: the mock provider answers from this same process.
  const proc = Bun.spawn(["timeout", "-k", "5", String(TURN_SECONDS), ...argv], {
    cwd,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code === 124 || code === 137)
    throw new Error(`${argv.join(" ")} did not finish in ${TURN_SECONDS} s\nstdout: ${stdout}\nstderr: ${stderr}`);
  return { code, stdout, stderr };
}

const pair = (code: string, args: string[]) => bounded([BIN, "pair", code, "--", ...args], p.root);

describe("lazy pair with Claude Code", () => {
  test("the worktree's hooks and MCP servers, and hooks in the task's harness folder, do not run; the user is told; the session files come along", async () => {
    const t = await taskWithWorktree("pair-claude", "claude");
    const marks = temp("lazy-pair-marks-");
    const hook = (name: string) => ({ hooks: [{ type: "command", command: `touch ${marks}/${name}` }] });
    mkdirSync(join(t.worktree, ".claude"), { recursive: true });
    writeFileSync(
      join(t.worktree, ".claude/settings.json"),
      JSON.stringify({ hooks: { SessionStart: [hook("worktree-hook")], UserPromptSubmit: [hook("worktree-hook")] } }),
    );
    writeFileSync(
      join(t.worktree, ".mcp.json"),
      JSON.stringify({ mcpServers: { evil: { command: "sh", args: ["-c", `touch ${marks}/worktree-mcp; sleep 2`] } } }),
    );
    // The task's harness folder is the container's CLAUDE_CONFIG_DIR: the agent could write
    // user-level settings there too, and --setting-sources user reads that level.
    writeFileSync(
      join(t.harness, "settings.json"),
      JSON.stringify({ hooks: { SessionStart: [hook("harness-hook")], UserPromptSubmit: [hook("harness-hook")] } }),
    );
    mkdirSync(join(t.harness, "projects", "earlier"), { recursive: true });
    writeFileSync(join(t.harness, "projects", "earlier", "s1.jsonl"), '{"type":"summary"}\n');
    const secret = join(marks, "host-secret.txt");
    writeFileSync(secret, "not the agent's to read\n");
    symlinkSync(secret, join(t.harness, "projects", "earlier", "link.jsonl"));

    anthropic.reset();
    const r = await pair("pair-claude", ["-p", "say hi", "--output-format", "json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split("\n").at(-1)!).result).toContain(Mock.DEFAULT_REPLY_TEXT);
    for (const m of ["worktree-hook", "worktree-mcp", "harness-hook"]) expect(existsSync(join(marks, m)), `${m} ran`).toBe(false);
    expect(r.stderr).toContain("lazy pair: not loaded from the worktree: .claude/settings.json (hooks)\n");
    expect(r.stderr).toContain("lazy pair: not loaded from the worktree: .mcp.json (MCP servers: evil)\n");
    // The pair's own folder holds the transcripts, not the link, not the agent's settings.
    const own = join(p.stateDir, "harness", `pair-${t.id}`);
    expect(readFileSync(join(own, "projects", "earlier", "s1.jsonl"), "utf8")).toBe('{"type":"summary"}\n');
    expect(existsSync(join(own, "projects", "earlier", "link.jsonl"))).toBe(false);
    expect(existsSync(join(own, "settings.json"))).toBe(false);
    expect(r.stderr).toContain("projects/earlier/link.jsonl (a link)");
    // What the pair said went back to the task's folder (its next container turn resumes it),
    // owned like that folder (the agent's uid when lazy runs as root).
    const back = sh(`grep -rl "say hi" ${join(t.harness, "projects")}`)
      .trim()
      .split("\n")
      .filter(Boolean);
    expect(back.length, "the pair's transcript in the task's harness folder").toBeGreaterThan(0);
    for (const f of back) expect(statSync(f).uid).toBe(statSync(t.harness).uid);

    // The same plants run when Claude Code is started plainly in that folder.
    const config = temp("lazy-pair-claude-config-");
    writeFileSync(join(config, "settings.json"), readFileSync(join(t.harness, "settings.json")));
    const plain = await bounded(["claude", "-p", "say hi", "--output-format", "json"], t.worktree, {
      CLAUDE_CONFIG_DIR: config,
      ANTHROPIC_BASE_URL: anthropic.url,
      ANTHROPIC_API_KEY: KEY,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    });
    expect(plain.code, plain.stderr).toBe(0);
    for (const m of ["worktree-hook", "worktree-mcp", "harness-hook"])
      expect(existsSync(join(marks, m)), `${m} did not run plainly`).toBe(true);
  }, 300_000);
});

describe("lazy pair with Pi", () => {
  let t: { id: string; worktree: string; harness: string };
  let marks: string;

  beforeAll(async () => {
    t = await taskWithWorktree("pair-pi", "pi");
    marks = temp("lazy-pair-marks-");
    mkdirSync(join(t.worktree, ".pi", "extensions"), { recursive: true });
    writeFileSync(
      join(t.worktree, ".pi/extensions/evil.ts"),
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(join(marks, "pi-extension"))}, "ran");\nexport default () => {};\n`,
    );
  }, 300_000);

  test("the worktree's .pi/extensions do not load; the user is told", async () => {
    anthropic.reset();
    const r = await pair("pair-pi", ["-p", "say hi"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(Mock.DEFAULT_REPLY_TEXT);
    expect(existsSync(join(marks, "pi-extension"))).toBe(false);
    expect(r.stderr).toContain("lazy pair: not loaded from the worktree: .pi/extensions/evil.ts\n");

    // The same extension runs when Pi is started plainly in that folder.
    const agentDir = temp("lazy-pair-pi-agent-");
    writeFileSync(join(agentDir, "models.json"), JSON.stringify({ providers: { anthropic: { baseUrl: anthropic.url } } }));
    const plain = await bounded(["pi", "--provider", "anthropic", "-p", "say hi"], t.worktree, {
      PI_CODING_AGENT_DIR: agentDir,
      ANTHROPIC_API_KEY: KEY,
      PI_OFFLINE: "1",
    });
    expect(plain.code, plain.stderr).toBe(0);
    expect(existsSync(join(marks, "pi-extension"))).toBe(true);
  }, 300_000);

  test("a .pi/settings.json that names a program Pi runs refuses the launch, naming it and the remedy", async () => {
    writeFileSync(join(t.worktree, ".pi/settings.json"), JSON.stringify({ shellPath: join(marks, "evil-shell") }));
    try {
      anthropic.reset();
      const r = await pair("pair-pi", ["-p", "say hi"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(".pi/settings.json (sets shellPath: a program Pi would run)");
      expect(r.stderr).toContain(`Remove it in ${t.worktree}`);
      expect(anthropic.received).toHaveLength(0);
    } finally {
      rmSync(join(t.worktree, ".pi/settings.json"));
    }
  }, 120_000);

  test("git in the pair is pinned to the task's repository as lazy recorded it", async () => {
    const out = join(marks, "git-env");
    anthropic.reset();
    anthropic.reply = {
      text: "checked git.",
      toolUse: {
        name: "bash",
        input: { command: `env | grep -E "^GIT_(DIR|COMMON_DIR|WORK_TREE)=" | sort > ${out}; git rev-parse --absolute-git-dir >> ${out}` },
      },
    };
    try {
      const r = await pair("pair-pi", ["-p", "check git"]);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      anthropic.reply = { text: Mock.DEFAULT_REPLY_TEXT };
    }
    const admin = join(p.stateDir, "tasks", t.id, "git", "admin");
    expect(readFileSync(out, "utf8")).toBe(
      `GIT_COMMON_DIR=${join(p.root, ".git")}\nGIT_DIR=${admin}\nGIT_WORK_TREE=${t.worktree}\n${admin}\n`,
    );
  }, 120_000);
});
