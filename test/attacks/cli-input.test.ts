/**
 * Attacks on what the CLI reads and hands to a shell (issue 30, items 5 and 7), by a hostile
 * local process or a checkout a pull brought:
 *
 * - A prompt file (`--file F`) that is a FIFO, /dev/zero, a link to a file of gigabytes, or a
 *   folder. Before this change a FIFO hung `lazy task add --file` for good (openSync waits for a
 *   writer before fstat can refuse it); the others were refused. Each is now refused at once,
 *   with its cause, before a byte is read and before the daemon makes anything.
 * - Task codes in completion. `lazy start <TAB>` (new here) offers codes a running daemon
 *   lists; bash's `compgen -W` expands its word list, so a code like `$(touch F)` would run on a
 *   TAB. Codes are checked when a task is made, so the attack plants them in the store itself
 *   (an older lazy, a hand edit), and also stands a fake `lazy` on PATH that answers hostile
 *   lines: neither is run nor offered, by lazy __complete or by the scripts; a planted escape
 *   sequence in a code is shown as text by task budget's and stop's messages and task show, never
 *   obeyed (that part held before this change too: print and say show control bytes as text).
 */

import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { chmodSync, closeSync, existsSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { lazyWithin, scratched } from "../helpers/fixtures";
import { BIN, cleanupAll, Project } from "../helpers/lazy";
import { has } from "../helpers/shells";

const scratch: string[] = [];
afterAll(() => cleanupAll(scratched(scratch)));

/** lazy with a deadline: a command that hangs is killed and reported as such. */
const bounded = (p: Project, args: string[], ms = 15_000) => lazyWithin(p, args, ms);

describe("a hostile prompt file is refused before it is read", () => {
  test("a FIFO, /dev/zero, a link to a 4 GiB file and a folder: each refused at once with its cause; no task is made", async () => {
    const p = new Project();
    await p.ok(["task", "add", "an honest task", "--code", "honest"]);
    const dir = join(p.root, "prompts");
    mkdirSync(dir);
    execFileSync("mkfifo", [join(dir, "fifo")]);
    symlinkSync("/dev/zero", join(dir, "zero"));
    // Sparse: 4 GiB by its size, nothing on disk.
    const huge = join(p.home, "huge.txt");
    const fd = openSync(huge, "w");
    ftruncateSync(fd, 4 * 1024 * 1024 * 1024);
    closeSync(fd);
    symlinkSync(huge, join(dir, "huge"));
    mkdirSync(join(dir, "folder"));
    const cases: [string, RegExp][] = [
      ["fifo", /prompts\/fifo is not a file; --file - reads standard input\./],
      ["zero", /prompts\/zero is not a file/],
      ["huge", /The (prompt|message) is 4294967296 bytes \(prompts\/huge\), over lazy's bound of 102400 bytes/],
      ["folder", /prompts\/folder is not a file/],
    ];
    for (const [name, cause] of cases)
      for (const args of [
        ["task", "add", "--file", `prompts/${name}`],
        ["run", "--file", `prompts/${name}`],
        ["send", "honest", "--file", `prompts/${name}`],
      ]) {
        const r = await bounded(p, args);
        expect(r.hung, `lazy ${args.join(" ")} hung`).toBe(false);
        expect(r.code).toBe(2);
        expect(r.stderr).toMatch(cause);
      }
    const tasks = (await p.json(["task", "list"])) as { code: string | null; status: string }[];
    expect(tasks.map((t) => [t.code, t.status])).toEqual([["honest", "queued"]]);
  }, 120_000);
});

describe("task codes a shell completes are inert", () => {
  const PWNED = () => join(tmpdir(), `lazy-pwned-${process.pid}`);
  const hostile = () => [`$(touch ${PWNED()})`, `\`touch ${PWNED()}\``, "esc\x1b]0;owned\x07code", "semi;touch-x"];

  /** The shells find this build's `lazy` (or a stand-in) first on PATH. */
  const shellEnv = (p: Project, bin: string) => p.fullEnv({ PATH: `${bin}:${process.env.PATH}` });

  async function tabs(p: Project, bin: string): Promise<{ bash: string; zsh: string; fish: string }> {
    const run = async (argv: string[], script: string) => {
      const proc = Bun.spawn(argv, { cwd: p.root, env: shellEnv(p, bin), stdin: new Blob([script]), stdout: "pipe", stderr: "pipe" });
      const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
      return out;
    };
    const bash = await run(
      [
        "bash",
        "-c",
        `source /dev/stdin
COMP_WORDS=(lazy start ''); COMP_CWORD=2; COMPREPLY=(); _lazy; printf '%s\\n' "\${COMPREPLY[@]}"
COMP_WORDS=(lazy watch --task ''); COMP_CWORD=3; COMPREPLY=(); _lazy; printf '%s\\n' "\${COMPREPLY[@]}"`,
      ],
      (await p.ok(["completion", "bash"])).stdout,
    );
    const zsh = has("zsh")
      ? await run(
          [
            "zsh",
            "-c",
            `_describe() { print -rl -- "\${(@P)\${@[-1]}}"; }
compadd() { print -rl -- "\${(@P)\${@[-1]}}"; }
_files() { :; }
source /dev/stdin
words=(lazy start ''); CURRENT=3; _lazy`,
          ],
          (await p.ok(["completion", "zsh"])).stdout,
        )
      : "";
    const fish = has("fish")
      ? await run(["fish", "-c", "source /dev/stdin; complete -C'lazy start '"], (await p.ok(["completion", "fish"])).stdout)
      : "";
    return { bash, zsh, fish };
  }

  test("codes planted in the store are neither run nor offered, and task budget shows an escape as text", async () => {
    const p = new Project();
    await p.ok(["task", "add", "an honest task", "--code", "honest"]);
    for (let i = 0; i < hostile().length; i++) await p.ok(["task", "add", `planted ${i}`, "--code", `plant-${i}`]);
    // The API refuses such codes; write them where lazy keeps them, with the daemon stopped.
    await p.ok(["daemon", "stop"]);
    const db = new Database(join(p.stateDir, "store.db"));
    for (const [i, code] of hostile().entries()) db.query("UPDATE tasks SET code = ? WHERE code = ?").run(code, `plant-${i}`);
    db.close();
    await p.ok(["daemon", "start"]);
    const listed = (await p.ok(["__complete", "tasks", "start"])).stdout;
    expect(listed).toBe("honest\tqueued\n");
    const offered = await tabs(p, dirname(BIN));
    expect(offered.bash).toBe("honest\nhonest\n");
    if (has("zsh")) expect(offered.zsh).toContain("honest:queued");
    if (has("fish")) expect(offered.fish).toContain("honest\tqueued");
    for (const out of Object.values(offered)) {
      expect(out).not.toContain("\x1b");
      expect(out).not.toContain("touch");
    }
    expect(existsSync(PWNED())).toBe(false);
    // The planted escape reaches a message by its id: shown as text, not obeyed.
    const planted = ((await p.json(["task", "list"])) as { id: string; code: string | null }[]).find((t) => t.code?.startsWith("esc"))!;
    const budget = await p.run(["task", "budget", planted.id.slice(0, 8), "+5"]);
    expect(budget.code).toBe(0);
    expect(budget.stdout + budget.stderr).toContain("esc\\x1b]0;owned\\x07code");
    expect(budget.stdout + budget.stderr).not.toContain("\x1b");
    // So do lazy stop's refusal and task show's branch line (lazy/<code>).
    for (const args of [
      ["stop", planted.id.slice(0, 8)],
      ["task", "show", planted.id.slice(0, 8)],
    ]) {
      const r = await p.run(args);
      expect(r.stdout + r.stderr).toContain("esc\\x1b]0;owned\\x07code");
      expect(r.stdout + r.stderr).not.toContain("\x1b");
    }
  }, 60_000);

  test("a stand-in lazy answering hostile lines: the scripts run none of them and offer none", async () => {
    const p = new Project();
    const bin = mkdtempSync(join(tmpdir(), "lazy-fakebin-"));
    scratch.push(bin);
    // It answers lazy completion with the real scripts and __complete with the attack.
    const lines = [...hostile(), "ok-code"].map((c) => `${c}\tqueued`).join("\n");
    writeFileSync(join(bin, "hostile.txt"), `${lines}\n`);
    writeFileSync(
      join(bin, "lazy"),
      `#!/bin/sh\nif [ "$1" = __complete ]; then cat '${join(bin, "hostile.txt")}'; exit 0; fi\nexec '${BIN}' "$@"\n`,
    );
    chmodSync(join(bin, "lazy"), 0o755);
    const offered = await tabs(p, bin);
    expect(offered.bash).toBe("ok-code\nok-code\n");
    if (has("zsh")) expect(offered.zsh.trim().split("\n")).toContain("ok-code:queued");
    if (has("fish")) expect(offered.fish).toBe("ok-code\tqueued\n");
    for (const out of Object.values(offered)) {
      expect(out).not.toContain("\x1b");
      expect(out).not.toContain("touch");
    }
    expect(existsSync(PWNED())).toBe(false);
  }, 60_000);
});
