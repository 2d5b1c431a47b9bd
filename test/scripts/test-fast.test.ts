/**
 * `bun run test:fast PATH…` (scripts/test-fast.ts): the paths given narrow the run to the fast
 * tier's files among them; a docker-tier file among them is left out by name, with its marker;
 * a path that names no test file stops the run; flags (and a flag's value) go to bun test.
 */
import { expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { select } from "../../scripts/test-fast";
import { tiers } from "../../scripts/test-tiers";

const ROOT = resolve(import.meta.dir, "../..");

test("files and folders given narrow the run to the fast-tier files among them; docker-tier ones are named as left out, with why", () => {
  const { fast, docker } = tiers();
  const dockerFile = "test/containers/remote-engine.test.ts";
  expect(docker).toContain(dockerFile);
  const s = select(["test/util/errors.test.ts", "test/scripts", dockerFile, "-t", "speak"], ROOT);
  expect(s.problem).toBeUndefined();
  expect(s.flags).toEqual(["-t", "speak"]);
  expect(s.files).toContain("test/util/errors.test.ts");
  expect(s.files).toContain("test/scripts/test-fast.test.ts");
  expect(s.files.every((f) => f === "test/util/errors.test.ts" || f.startsWith("test/scripts/"))).toBe(true);
  expect(s.files.every((f) => fast.includes(f))).toBe(true);
  expect(s.left).toEqual([{ file: dockerFile, why: expect.any(String) }]);
  expect(s.left[0]!.why.length).toBeGreaterThan(0);
  // Taken from where the command runs, as a shell would.
  expect(select(["errors.test.ts"], join(ROOT, "test", "util")).files).toEqual(["test/util/errors.test.ts"]);
});

test("with no path, the whole fast tier; a path naming no test file stops the run, saying so", () => {
  const all = select(["--bail"], ROOT);
  expect(all.files).toEqual(tiers().fast);
  expect(all.flags).toEqual(["--bail"]);
  expect(select(["test/no-such-folder"], ROOT).problem).toBe(`test/no-such-folder: no such file or folder (paths are taken from ${ROOT})`);
  expect(select(["src/util"], ROOT).problem).toContain("src/util: no test file (*.test.ts) there");
});
