/**
 * Provenance against a hostile agent (issue 38): real Claude Code in its task container, told by
 * the mock provider to Write a huge file whose text holds escapes and a URL with a token in its
 * query, then in one Bash call to name files after its placeholder and with escapes and a line
 * break, commit with a hostile message, and forge lazy's notes (git notes and update-ref of
 * refs/notes/agent-trace). Asserted on the host: the record noted on the commit is lazy's
 * (valid against the Agent Trace schema, the notes ref's commits are lazy's own, nothing says
 * "forged"), holds no placeholder, MCP token or query string, bounds the tool input, and
 * `lazy trace` prints it inert (no escape byte reaches the terminal).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { anthropicProject, settledAs, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-TRACEATTACK-${"x".repeat(68)}AA`;
let anthropic: Mock.MockProvider;
let p: Project;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
// https://github.com/cursor/agent-trace/blob/2754f077f3e50c1fb5088183f5c9362077cc8ca1/README.md (6.1)
const valid = ajv.compile(JSON.parse(readFileSync(join(import.meta.dir, "../fixtures/agent-trace-record.schema.json"), "utf8")));

beforeAll(async () => ({ anthropic, p } = await anthropicProject(KEY)), 120_000);
afterAll(() => teardown(p, anthropic));

/** A request to the daemon's API with its token, answered as it is (status and body). */
const fetchApi = (path: string) => {
  const rt = JSON.parse(readFileSync(join(p.stateDir, "daemon.json"), "utf8"));
  return fetch(`http://127.0.0.1:${rt.api.port}${path}`, { headers: { authorization: `Bearer ${p.token()}` } });
};

const git = (args: string[]) => {
  const r = Bun.spawnSync(["git", ...args], { cwd: p.root, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};

/** 2,000 lines of 100 characters after a first line with escapes and a URL carrying a token. */
const HUGE = `const u = "https://api.example.com/x?token=SECRETQUERY&k=1"; // \x1b[2J\x1b]0;pwned\x07\r\n${`${"A".repeat(100)}\n`.repeat(2000)}`;

const HOSTILE = [
  `f="src/key-\${ANTHROPIC_API_KEY}-\${LAZY_MCP_TOKEN}.ts"`,
  `printf 'k\\n' > "$f"`,
  `n="$(printf 'src/evil\\033[31m\\nname.ts')"`,
  `printf 'e\\n' > "$n"`,
  `git add -A src`,
  `git commit -qm "$(printf 'hostile \\033]0;title\\007 ')$ANTHROPIC_API_KEY $LAZY_MCP_TOKEN"`,
  // The agent tries to write lazy's records itself.
  `git notes --ref agent-trace add -m forged HEAD; git update-ref refs/notes/agent-trace HEAD; echo notes-tried`,
].join("; ");

describe("a hostile agent and the trace records", () => {
  test("the record of its commit is lazy's, holds no secret or query string, and lazy trace prints it inert", async () => {
    await p.ok(["task", "add", "Do the hostile things", "--code", "evil"]);
    const wt = join(p.stateDir, "worktrees", "evil");
    anthropic.answer({
      text: "Done.",
      steps: [
        { name: "Write", input: { file_path: `${wt}/src/q.ts`, content: HUGE } },
        { name: "Bash", input: { command: HOSTILE, description: "hostile" } },
      ],
    });
    await p.ok(["start", "evil"]);
    await settledAs(p, "evil");
    const registry = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8"));
    const task = (await p.json(["task", "show", "evil"])).task;
    const secrets: string[] = [
      ...registry.grants.filter((g: any) => g.taskId === task.id).map((g: any) => g.token),
      ...registry.mcpTokens.filter((t: any) => t.taskId === task.id).map((t: any) => t.token),
    ];
    expect(secrets.length).toBeGreaterThanOrEqual(2);

    const commits = git(["rev-list", "HEAD..refs/heads/lazy/evil"]).out.trim().split("\n");
    expect(commits).toHaveLength(1);
    const c = commits[0]!;
    // The agent's file names really carry its secrets (the attack happened).
    const names = git(["show", "--format=", "--name-only", "-z", c]).out;
    for (const s of secrets) expect(names).toContain(s);

    // Written right after the turn's status moves.
    await until(() => git(["notes", "--ref", "agent-trace", "show", c]).code === 0, 10_000, "the commit's trace record");
    const note = git(["notes", "--ref", "agent-trace", "show", c]);
    expect(note.code, note.err).toBe(0);
    // Nothing secret, no query string, no raw control byte.
    for (const s of secrets) expect(note.out).not.toContain(s);
    expect(note.out).not.toMatch(/sk-ant-api03-lazy-|lazy-mcp-[0-9a-f]/);
    expect(note.out).not.toContain("SECRETQUERY");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(note.out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    expect(note.out.length).toBeLessThan(64 * 1024);
    const rec = JSON.parse(note.out);
    expect(valid(rec), JSON.stringify(valid.errors)).toBe(true);
    // lazy's, not the agent's: the notes ref holds lazy's commits only, and the record is lazy's.
    expect(rec.tool.name).toBe("lazy");
    expect(note.out).not.toContain("forged");
    expect(
      git(["log", "--format=%an", "refs/notes/agent-trace"])
        .out.trim()
        .split("\n")
        .every((a) => a === "lazy"),
    ).toBe(true);
    expect(git(["for-each-ref", "--format=%(refname)", "refs/notes"]).out.trim()).toBe("refs/notes/agent-trace");
    expect(git(["notes", "--ref", "agent-trace", "list"]).out.trim().split("\n")).toHaveLength(1);
    const paths = rec.files.map((f: any) => f.path).sort();
    expect(paths).toContain("src/q.ts");
    expect(paths.some((x: string) => x.startsWith("src/key-[secret]-[secret].ts"))).toBe(true);
    expect(paths).toContain("src/evil\x1b[31m\nname.ts");
    // The huge Write: its input is kept as lazy logs keeps it (2,000 characters and the cut said), its query cut.
    const tool = rec.metadata["dev.lazy"].tools.find((t: any) => t.name === "Write");
    expect(tool.input.length).toBeLessThan(2_200);
    expect(tool.input).toContain("https://api.example.com/x?…");
    expect(rec.files.find((f: any) => f.path === "src/q.ts").conversations[0].ranges).toEqual([
      { start_line: 1, end_line: 2001, content_hash: expect.stringMatching(/^sha256:/) },
    ]);

    // The dashboard's trace route takes a path from a request: one outside the project, one that
    // reads as a git option, one with a NUL are refused; none reaches anything but git blame after --.
    for (const bad of ["../../../../etc/passwd", "--output=/tmp/lazy-trace-pwned", "src/q.ts\0x", "/etc/passwd"]) {
      const r = await fetchApi(`/api/tasks/evil/trace?path=${encodeURIComponent(bad)}&line=1`);
      expect(r.status, bad).toBe(400);
    }
    expect(existsSync("/tmp/lazy-trace-pwned")).toBe(false);
    const ok = await fetchApi(`/api/tasks/evil/trace?path=${encodeURIComponent("src/evil\x1b[31m\nname.ts")}&line=1`);
    expect(ok.status).toBe(200);
    expect((await ok.json()).agent).toBe(true);

    anthropic.answer({ text: "Adds files." }); // the accept summary
    await p.ok(["accept", "evil"]);
    const shown = await p.ok(["trace", "src/q.ts:1"]);
    expect(shown.stdout).toContain("src/q.ts:1 was written by an agent task:");
    expect(shown.stdout).toMatch(/tool call {2}Write /);
    expect(shown.stdout).toContain("https://api.example.com/x?…");
    expect(shown.stdout).not.toContain("SECRETQUERY");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(shown.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    const evil = await p.ok(["trace", "src/evil\x1b[31m\nname.ts:1"]);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the bytes a terminal would obey
    expect(evil.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
    expect(evil.stdout.split("\n")[0]).toBe("src/evil\\x1b[31m\\nname.ts:1 was written by an agent task:");
    for (const s of secrets) expect(`${shown.stdout}${evil.stdout}`).not.toContain(s);
  }, 600_000);
});
