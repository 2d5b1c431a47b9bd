/**
 * Completion of task codes (issue 30, Deliver 7): `lazy start <TAB>` offers the project's task
 * codes in bash, zsh and fish, asked of the running daemon through the hidden `lazy __complete
 * tasks`; only the tasks the command can act on (a queued task can be started, not sent to or
 * stopped); the value of --task too; and with no daemon running, nothing is offered and no
 * daemon is started.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { BIN, cleanupAll, Project } from "../helpers/lazy";
import { has, zshCompleting } from "../helpers/shells";

afterAll(cleanupAll);

/** The shells find `lazy` on PATH, as they would for a person: this build's. */
const PATH = `${dirname(BIN)}:${process.env.PATH}`;

async function sh(p: Project, argv: string[], script: string): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn(argv, {
    cwd: p.root,
    env: p.fullEnv({ PATH }),
    stdin: new Blob([script]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

const BASH_T = `t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _lazy; echo "$*|\${COMPREPLY[*]}"; }`;

/** Each TAB in bash: the words typed, then what is offered. */
async function bashTabs(p: Project, lines: string[]): Promise<string[]> {
  const script = (await p.ok(["completion", "bash"])).stdout;
  const r = await sh(p, ["bash", "-c", `source /dev/stdin\n${BASH_T}\n${lines.join("\n")}`], script);
  expect(r.err).toBe("");
  return r.out.trim().split("\n");
}

describe("with no daemon running", () => {
  test("lazy start <TAB> offers nothing and starts no daemon", async () => {
    const p = new Project();
    const direct = await p.run(["__complete", "tasks", "start"]);
    expect(direct).toMatchObject({ code: 0, stdout: "" });
    expect(await bashTabs(p, ["t lazy start ''"])).toEqual(["lazy start |"]);
    expect(existsSync(join(p.home, "daemon"))).toBe(false);
    expect(p.runtime()).toBeUndefined();
  });
});

describe("with the project's daemon running", () => {
  const p = new Project();
  beforeAll(async () => {
    await p.ok(["task", "add", "fix the login form", "--code", "fix-login"]);
    await p.ok(["task", "add", "a task with no code"]);
    await p.ok(["task", "add", "closed already", "--code", "old-one"]);
    await p.ok(["close", "old-one"]);
  });

  const noCode = async () =>
    ((await p.json(["task", "list"])) as { id: string; code: string | null }[]).find((t) => !t.code)!.id.slice(0, 8);

  test("__complete tasks prints code<TAB>status for the tasks the command can act on", async () => {
    const id8 = await noCode();
    const start = (await p.ok(["__complete", "tasks", "start"])).stdout.trim().split("\n").sort();
    expect(start).toEqual([`${id8}\tqueued`, "fix-login\tqueued"].sort());
    // Queued tasks have had no turn: nothing to send to, nothing to stop.
    expect((await p.ok(["__complete", "tasks", "send"])).stdout).toBe("");
    expect((await p.ok(["__complete", "tasks", "stop"])).stdout).toBe("");
    // Reading commands offer every task, the closed one included.
    expect((await p.ok(["__complete", "tasks", "logs"])).stdout).toContain("old-one\tclosed");
    expect((await p.ok(["__complete", "tasks", "task", "budget"])).stdout).not.toContain("old-one");
    // Hidden from people: no help list, no completion of command names.
    expect((await p.ok(["--help"])).stdout).not.toContain("__complete");
    expect((await p.ok(["completion", "bash"])).stdout).not.toMatch(/REPLY='[^']*__complete/);
  });

  test("bash: lazy start <TAB> offers the codes, a prefix narrows them, --task's value too, a message position none", async () => {
    const id8 = await noCode();
    const out = await bashTabs(p, [
      "t lazy start ''",
      "t lazy start fix",
      "t lazy send fix-login ''",
      "t lazy stop ''",
      "t lazy watch --task ''",
      "t lazy stats audit --task = fi",
      "t lazy diff --stat ''",
      "t lazy task budget ''",
    ]);
    const sorted = (l: string) => {
      const [words, offered] = l.split("|");
      return `${words}|${offered!.split(" ").filter(Boolean).sort().join(" ")}`;
    };
    expect(out.map(sorted)).toEqual(
      [
        `lazy start |${id8} fix-login`,
        "lazy start fix|fix-login",
        "lazy send fix-login |",
        "lazy stop |",
        `lazy watch --task |${id8} fix-login old-one`,
        "lazy stats audit --task = fi|fix-login",
        `lazy diff --stat |${id8} fix-login old-one`,
        `lazy task budget |${id8} fix-login`,
      ].map(sorted),
    );
  });

  test.skipIf(!has("zsh"))("zsh: lazy start <TAB> offers the codes with their status", async () => {
    const script = (await p.ok(["completion", "zsh"])).stdout;
    const r = await sh(p, ["zsh", "-c", zshCompleting("/dev/stdin", "lazy start ''", "lazy ask --task ''")], script);
    expect(r.err).toBe("");
    const [, start, ask] = r.out.split(/== .*\n/);
    expect(start).toContain("fix-login:queued\n");
    expect(start).not.toContain("old-one");
    expect(ask).toContain("old-one:closed\n");
  });

  test.skipIf(!has("fish"))("fish: complete -C 'lazy start ' offers the codes with their status", async () => {
    const script = (await p.ok(["completion", "fish"])).stdout;
    const r = await sh(
      p,
      ["fish", "-c", `source /dev/stdin; complete -C'lazy start '; echo ==; complete -C'lazy send fix-login '`],
      script,
    );
    expect(r.err).toBe("");
    const [start, send] = r.out.split("==\n");
    expect(start).toContain("fix-login\tqueued\n");
    expect(start).not.toContain("old-one");
    expect(send).not.toContain("fix-login");
  });
});
