/**
 * The CLI's voice (consola): lazy's own words, colour only on a terminal, NO_COLOR honoured,
 * confirmations on stdout and errors on stderr.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { Project, cleanupAll } from "../helpers/lazy";

afterAll(cleanupAll);

const BIN = join(import.meta.dir, "..", "..", "dist", "lazy");
const ESC = "\x1b[";

/** Run the binary on a real pseudo-terminal (util-linux `script`), both streams on it. */
async function onTerminal(p: Project, args: string[], env: Record<string, string> = {}): Promise<string> {
  const cmd = [BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ");
  const full: Record<string, string> = { ...p.fullEnv(env), TERM: "xterm" };
  delete full.FORCE_COLOR;
  if (!("NO_COLOR" in env)) delete full.NO_COLOR;
  const proc = Bun.spawn(["script", "-qec", cmd, "/dev/null"], { cwd: p.root, env: full, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return out;
}

describe("the CLI's voice", () => {
  test("an error on a terminal has a coloured prefix; piped, it has none", async () => {
    const p = new Project();
    const tty = await onTerminal(p, ["task", "show", "no-such"]);
    expect(tty).toContain(`${ESC}31mlazy:${ESC}0m No task "no-such"`);
    const piped = await p.run(["task", "show", "no-such"], { env: { FORCE_COLOR: undefined, NO_COLOR: undefined } });
    expect(piped.code).toBe(1);
    expect(piped.stderr).toStartWith('lazy: No task "no-such"');
    expect(piped.stderr).not.toContain(ESC);
  });

  test("NO_COLOR turns colour off on a terminal", async () => {
    const p = new Project();
    const tty = await onTerminal(p, ["task", "show", "no-such"], { NO_COLOR: "1" });
    expect(tty).toContain('lazy: No task "no-such"');
    expect(tty).not.toContain(ESC);
  });

  test("a confirmation goes to stdout, green only on a terminal", async () => {
    const p = new Project();
    const piped = await p.ok(["task", "add", "one thing", "--code", "one"]);
    expect(piped.stdout).toStartWith("Added task ");
    expect(piped.stderr).toBe("");
    expect(piped.stdout).not.toContain(ESC);
    const tty = await onTerminal(p, ["task", "add", "another thing", "--code", "two"]);
    expect(tty).toContain(`${ESC}32mAdded task `);
  });
});
