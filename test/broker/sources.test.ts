/**
 * The broker's secret sources on this host: a stand-in for `gh auth token` run by the daemon's
 * code for real (cached, re-run after its lifetime, one run for concurrent asks), its failures
 * worded and backed off, its output bounded, a hanging run killed; a stored credential's absence
 * worded. No mocks: real processes, a real clock (an injected one only to step over the back-off).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RETRY_MS, SourceError, Sources } from "../../src/broker/sources";
import { isAlive, until } from "../helpers/lazy";
import { keptLog, tempDir } from "./helpers";

const tmp = tempDir();
afterAll(() => tmp.cleanup());
const task = { id: "t1", repos: [] };
const count = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0);

/** A command that counts its runs in `file` and prints a token naming the run. */
function counter(name: string): { argv: string[]; file: string } {
  const file = join(tmp.dir, `${name}.count`);
  const path = tmp.script(name, `echo run >> "${file}"\nn=$(wc -l < "${file}" | tr -d ' ')\necho "  "\necho "ghs_token${name}run$n"`);
  return { argv: [path], file };
}

async function refusal(p: Promise<unknown>): Promise<SourceError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(SourceError);
  return e as SourceError;
}

describe("command source", () => {
  test("run once for concurrent asks, cached, run again once its stated lifetime nears its end", async () => {
    const { argv, file } = counter("gh");
    const log = keptLog();
    const sources = new Sources({ credential: async () => null, log, cwd: tmp.dir });
    const spec = { kind: "command" as const, argv, ttlMs: 1500 };
    const started = Date.now();
    const first = await Promise.all(Array.from({ length: 5 }, () => sources.get("github", spec, task)));
    expect(count(file)).toBe(1);
    for (const s of first) expect(s.value).toBe("ghs_tokengh" + "run1");
    expect(first[0]!.expiresAt).toBeGreaterThanOrEqual(started + 1500);
    expect(first[0]!.expiresAt).toBeLessThanOrEqual(Date.now() + 1500);
    // Cached: asked again at once, the command does not run.
    expect((await sources.get("github", spec, task)).value).toBe("ghs_tokenghrun1");
    expect(count(file)).toBe(1);
    // Re-run before it expires (at ttl minus a tenth): poll until the second run's token is given.
    const second = await until(
      async () => {
        const s = await sources.get("github", spec, task);
        return s.value === "ghs_tokenghrun2" ? s : undefined;
      },
      10_000,
      "the command's second run",
    );
    expect(second.expiresAt! - first[0]!.expiresAt!).toBeGreaterThan(0);
    expect(count(file)).toBe(2);
    const [status] = sources.status();
    expect(status).toMatchObject({ service: "github", kind: "command", ok: true });
    expect(status!.detail).toContain(argv[0]!);
    for (const line of [...log.lines, status!.detail]) expect(line).not.toContain("ghs_token");
  }, 30_000);

  test("a failing command is worded (exit code, stderr's last line with the secret cut) and re-run only after the back-off", async () => {
    const file = join(tmp.dir, "fail.count");
    const leaked = "ghp_" + "Z".repeat(36);
    const path = tmp.script(
      "fail",
      `echo run >> "${file}"\necho "first line" >&2\necho "gh: token ${leaked} was revoked; run gh auth login" >&2\nexit 1`,
    );
    let now = Date.now();
    const log = keptLog();
    const sources = new Sources({ credential: async () => null, log, cwd: tmp.dir, now: () => now });
    const spec = { kind: "command" as const, argv: [path], ttlMs: 60_000 };
    const e = await refusal(sources.get("github", spec, task));
    expect(e.message).toBe(
      `the command "${path}" for service github exited with 1: gh: token <redacted> was revoked; run gh auth login. Fix it on the host (run it yourself), then retry the turn.`,
    );
    expect(e.service).toBe("github");
    // A flood of asks within the back-off runs nothing more.
    for (let i = 0; i < 20; i++) expect((await refusal(sources.get("github", spec, task))).message).toBe(e.message);
    expect(count(file)).toBe(1);
    const [status] = sources.status();
    expect(status).toMatchObject({ service: "github", kind: "command", ok: false, detail: e.message });
    now += RETRY_MS + 1;
    await refusal(sources.get("github", spec, task));
    expect(count(file)).toBe(2);
    for (const line of log.lines) expect(line).not.toContain(leaked);
  });

  test("a command that prints 1 MB is refused by the 64 KiB bound", async () => {
    const path = tmp.script("flood", `head -c 1048576 /dev/zero | tr '\\0' a`);
    const sources = new Sources({ credential: async () => null, log: keptLog(), cwd: tmp.dir });
    const e = await refusal(sources.get("npm", { kind: "command", argv: [path], ttlMs: 60_000 }, task));
    expect(e.message).toContain(`the command "${path}" for service npm printed more than 64 KiB, the most lazy reads of a token command`);
    expect(e.message.length).toBeLessThan(400);
  });

  test("a command that hangs is killed at the timeout, its children with it", async () => {
    const pids = join(tmp.dir, "hang.pids");
    const path = tmp.script("hang", `sleep 300 &\necho "$$ $!" > "${pids}"\nwait`);
    const sources = new Sources({ credential: async () => null, log: keptLog(), cwd: tmp.dir, commandTimeoutMs: 700 });
    const e = await refusal(sources.get("github", { kind: "command", argv: [path], ttlMs: 60_000 }, task));
    expect(e.message).toBe(
      `the command "${path}" for service github did not finish within 0.7 s and was killed (a prompt waiting for input?). Fix it on the host (run it yourself), then retry the turn.`,
    );
    const [shell, sleeper] = readFileSync(pids, "utf8").trim().split(" ").map(Number);
    await until(() => !isAlive(shell!) && !isAlive(sleeper!), 5_000, "the command and its child to be gone");
  });

  test("what is not a token, and a command that cannot start, are worded", async () => {
    const sources = new Sources({ credential: async () => null, log: keptLog(), cwd: tmp.dir });
    const spaced = tmp.script("spaced", `echo "Logged in as octocat"`);
    const e1 = await refusal(sources.get("a", { kind: "command", argv: [spaced], ttlMs: 60_000 }, task));
    expect(e1.message).toContain("gave no token: its first line is not one token (printable ASCII, no spaces");
    const silent = tmp.script("silent", "true");
    const e2 = await refusal(sources.get("b", { kind: "command", argv: [silent], ttlMs: 60_000 }, task));
    expect(e2.message).toContain("gave no token: it printed nothing on stdout");
    const e3 = await refusal(
      sources.get("c", { kind: "command", argv: [join(tmp.dir, "no-such-tool"), "auth", "token"], ttlMs: 60_000 }, task),
    );
    expect(e3.message).toContain(`the command "${join(tmp.dir, "no-such-tool")} auth token" for service c could not start`);
    expect(e3.message).toContain("is it installed and on the daemon's PATH?");
  });
});

describe("credential source", () => {
  test("a stored credential is given; a missing one names lazy auth set", async () => {
    const stored: Record<string, string> = { "gh-token": "ghp_" + "a".repeat(36) };
    const sources = new Sources({ credential: async (n) => stored[n] ?? null, log: keptLog(), cwd: tmp.dir });
    expect(await sources.get("github", { kind: "credential", name: "gh-token" }, task)).toEqual({
      value: stored["gh-token"]!,
      expiresAt: null,
    });
    const e = await refusal(sources.get("npm", { kind: "credential", name: "npm-token" }, task));
    expect(e.message).toStartWith("service npm: no credential npm-token: lazy auth set npm-token");
    expect(sources.status().map((s) => [s.service, s.ok])).toEqual([
      ["github", true],
      ["npm", false],
    ]);
    for (const s of sources.status()) expect(s.detail).not.toContain(stored["gh-token"]!);
  });
});
