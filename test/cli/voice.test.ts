/**
 * The CLI's voice (consola): lazy's own words, colour only on a terminal, NO_COLOR honoured,
 * confirmations on stdout and errors on stderr.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const ESC = "\x1b[";

describe("the CLI's voice", () => {
  test("an error on a terminal has a coloured prefix; piped, it has none", async () => {
    const p = new Project();
    const tty = await p.onTerminal(["task", "show", "no-such"]);
    expect(tty).toContain(`${ESC}31mlazy:${ESC}0m No task "no-such"`);
    const piped = await p.run(["task", "show", "no-such"], { env: { FORCE_COLOR: undefined, NO_COLOR: undefined } });
    expect(piped.code).toBe(1);
    expect(piped.stderr).toStartWith('lazy: No task "no-such"');
    expect(piped.stderr).not.toContain(ESC);
  });

  test("NO_COLOR turns colour off on a terminal", async () => {
    const p = new Project();
    const tty = await p.onTerminal(["task", "show", "no-such"], { NO_COLOR: "1" });
    expect(tty).toContain('lazy: No task "no-such"');
    expect(tty).not.toContain(ESC);
  });

  test("a confirmation goes to stdout, green only on a terminal", async () => {
    const p = new Project();
    const piped = await p.ok(["task", "add", "one thing", "--code", "one"]);
    expect(piped.stdout).toStartWith("Added task ");
    expect(piped.stderr).toBe("");
    expect(piped.stdout).not.toContain(ESC);
    const tty = await p.onTerminal(["task", "add", "another thing", "--code", "two"]);
    expect(tty).toContain(`${ESC}32mAdded task `);
  });
});
