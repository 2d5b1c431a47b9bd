/**
 * The CLI's conventions (issue 19 item 7): no escape byte in what is piped or under NO_COLOR,
 * help included; control bytes in data are shown, never obeyed; every read command has --json,
 * with nothing but JSON on stdout.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { BIN, cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const ESC = "\x1b";
/** The environment of a user who asked for nothing: no NO_COLOR, FORCE_COLOR, CI or TEST. */
const plain = { NO_COLOR: undefined, FORCE_COLOR: undefined, CI: undefined, TEST: undefined };
const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;

/** `sh -c CMD` in the project, CMD seeing the binary as `lazy`. */
async function shell(p: Project, cmd: string, env: Record<string, string | undefined> = plain): Promise<string> {
  const proc = Bun.spawn(["sh", "-c", `lazy() { ${quote(BIN)} "$@"; }; ${cmd}`], {
    cwd: p.root,
    env: p.fullEnv(env),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return out;
}

/** Run the binary on a real pseudo-terminal (util-linux `script`), both streams on it. */
async function onTerminal(p: Project, args: string[], env: Record<string, string | undefined> = {}): Promise<string> {
  const proc = Bun.spawn(["script", "-qec", [BIN, ...args].map(quote).join(" "), "/dev/null"], {
    cwd: p.root,
    env: p.fullEnv({ ...plain, TERM: "xterm", ...env }),
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  return out;
}

describe("colour and escape bytes", () => {
  test("lazy --help | od -c and lazy task list | od -c show no escape byte", async () => {
    const p = new Project();
    await p.ok(["task", "add", "Fix the login form", "--code", "fix-login"]);
    for (const cmd of ["lazy --help | od -c", "lazy task --help | od -c", "lazy task list | od -c"]) {
      const dump = await shell(p, cmd);
      expect(dump.length).toBeGreaterThan(0);
      // od -c shows ESC as "033"; the first column is the offset (it may contain 033 too).
      const bytes = dump
        .split("\n")
        .map((l) => l.replace(/^\d+/, ""))
        .join("\n");
      expect(bytes.length).toBeGreaterThan(0);
      expect(bytes).not.toMatch(/(^|\s)033(\s|$)/m);
    }
    // Without od, for the words: the help is there, only plain.
    const help = await p.run(["--help"], { env: plain });
    expect(help.stdout).toContain("USAGE lazy ");
    expect(help.stdout).toContain("completion");
    expect(help.stdout).not.toContain(ESC);
  });

  test("help is coloured on a terminal, and not with NO_COLOR set (any value)", async () => {
    const p = new Project();
    expect(await onTerminal(p, ["--help"])).toContain(`${ESC}[`);
    for (const v of ["1", "true"]) {
      const out = await onTerminal(p, ["task", "--help"], { NO_COLOR: v });
      expect(out).toContain("USAGE lazy task");
      expect(out).not.toContain(ESC);
    }
  });

  test("control bytes in a task's title are shown, not obeyed, on a terminal and piped", async () => {
    const p = new Project();
    await p.ok(["task", "add", `Evil ${ESC}]0;owned${ESC}\\ title ${ESC}[2J\rhidden`, "--code", "evil"]);
    const piped = await p.ok(["task", "list"], { env: plain });
    expect(piped.stdout).not.toContain(ESC);
    expect(piped.stdout).not.toContain("\r");
    expect(piped.stdout).toContain("Evil \\x1b]0;owned\\x1b\\ title \\x1b[2J\\x0dhidden");
    const tty = await onTerminal(p, ["task", "show", "evil"]);
    expect(tty).toContain("Title:   Evil \\x1b]0;owned");
    expect(tty).not.toContain(`${ESC}]0;owned`);
    // JSON keeps the title exactly (JSON escapes it), for a program to read.
    expect((await p.json(["task", "show", "evil"])).task.title).toBe(`Evil ${ESC}]0;owned${ESC}\\ title ${ESC}[2J\rhidden`);
    // An error quoting what was typed: the voice shows the byte too.
    const err = await p.run(["task", "show", `no${ESC}[31m`], { env: plain });
    expect(err.stderr).toContain('No task "no\\x1b[31m"');
    expect(err.stderr).not.toContain(ESC);
  });
});

describe("--json on every read command", () => {
  test("each prints one JSON document on stdout and nothing else", async () => {
    const p = new Project();
    const t = await p.json(["task", "add", "Look around", "--code", "look"]);
    expect(await p.json(["--version"])).toEqual({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      commit: expect.any(String),
      date: expect.any(String),
    });
    expect(await p.json(["daemon", "status"])).toMatchObject({ running: true, root: p.root });
    expect((await p.json(["dashboard"])).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/?#token=/);
    expect(Array.isArray((await p.json(["auth", "list"])).credentials)).toBe(true);
    expect(Array.isArray((await p.json(["stats", "audit"])).rows)).toBe(true);
    expect(Array.isArray((await p.json(["stats", "limits"])).health)).toBe(true);
    expect((await p.json<any[]>(["task", "list"]))[0].id).toBe(t.id);
    expect((await p.json(["task", "show", "look"])).task.id).toBe(t.id);
    // doctor exits non-zero on a blocking problem (no credential here); its JSON still stands alone.
    const doctor = await p.run(["doctor", "--json"]);
    expect(JSON.parse(doctor.stdout).findings.map((f: { check: string }) => f.check)).toContain("daemon");
  });

  test("streams print one JSON object a line: lazy logs and lazy daemon logs", async () => {
    const p = new Project();
    await p.ok(["task", "add", "Something", "--code", "some"]);
    const events = (await p.ok(["logs", "some", "--json"])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events[0]).toMatchObject({ kind: "created" });
    const logged = (await p.ok(["daemon", "logs", "--json"])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0]).toEqual({
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      level: expect.any(String),
      tag: expect.any(String),
      message: expect.any(String),
    });
    expect((await p.ok(["daemon", "logs", "-n", "1", "--json"])).stdout.trim().split("\n")).toHaveLength(1);
    const bad = await p.run(["daemon", "logs", "-n", "many"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--lines takes a whole number, not "many"');
    const stopped = await p.json(["daemon", "stop"]);
    expect(stopped).toEqual({ stopped: true, pid: expect.any(Number) });
    expect(await p.json(["daemon", "stop"])).toEqual({ stopped: false, pid: null });
  });
});
