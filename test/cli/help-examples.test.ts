/**
 * "An EXAMPLES section per command" (issue 30, Deliver 7): walk every command lazy lists in its
 * help (COMMANDS sections, recursively) and ask `lazy help <path>` for each: each has EXAMPLES,
 * each example runs that very command, and none names a hidden command.
 * tier: fast (the examples are read, never run)
 */
import { afterAll, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const p = new Project();

/** The subcommands a help text lists under COMMANDS. */
function listed(help: string): string[] {
  const i = help.indexOf("\nCOMMANDS\n");
  if (i < 0) return [];
  const end = help.indexOf("\nUse lazy", i);
  return help
    .slice(i, end < 0 ? undefined : end)
    .split("\n")
    .map((l) => /^\s+([a-z][a-z-]*)\s{2,}\S/.exec(l)?.[1])
    .filter((n): n is string => !!n);
}

test("every command lazy lists has EXAMPLES that run it", async () => {
  const seen: string[] = [];
  const missing: string[] = [];
  const walk = async (path: string[]) => {
    const r = await p.ok(["help", ...path], { env: { COLUMNS: "200" } });
    if (path.length) {
      seen.push(path.join(" "));
      const at = r.stdout.indexOf("\nEXAMPLES\n\n");
      if (at < 0) missing.push(path.join(" "));
      else {
        const examples = r.stdout
          .slice(at + "\nEXAMPLES\n\n".length)
          .split("\n")
          .filter((l) => l.trim());
        expect(examples.length).toBeGreaterThan(0);
        // At least one example is the command itself, as typed.
        expect(
          examples.some((e) => e.includes(`lazy ${path.join(" ")}`)),
          `lazy ${path.join(" ")}'s examples: ${examples}`,
        ).toBe(true);
        for (const e of examples) expect(e).not.toMatch(/\b(supervise|__complete)\b/);
      }
    }
    for (const sub of listed(r.stdout)) await walk([...path, sub]);
  };
  await walk([]);
  expect(missing).toEqual([]);
  // The walk did reach the commands (not an empty list passing by itself).
  expect(seen).toEqual(
    expect.arrayContaining(["run", "task add", "daemon restart", "auth set", "stats audit", "completion", "help", "version"]),
  );
  expect(seen.length).toBeGreaterThan(35);
}, 120_000);
