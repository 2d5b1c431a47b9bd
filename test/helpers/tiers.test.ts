/**
 * The suite's tiers (scripts/test-tiers.ts): a file lands in the docker tier by what it uses,
 * with nothing to register, and `bun run test:fast` holds no file that asks for an engine.
 * tier: fast (the markers below are samples, read as text)
 */
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { dockerMarker, tiers } from "../../scripts/test-tiers";

const ROOT = resolve(import.meta.dir, "../..");

test("a new file that uses a Docker fixture, adds a task or runs docker is in the docker tier by itself", () => {
  for (const text of [
    `const p = await containerProject(mock, KEY);`,
    `await launched(p, "x", "prompt");`,
    `const s = await settledAs(p, "x");`,
    `await p.ok(["task", "add", "a prompt", "--code", "a"]);`,
    `await p.json(["run", "a prompt"]);`,
    `import { remoteImage } from "../helpers/second-engine";`,
    `sh("/", "docker ps -aq");`,
    `Bun.spawnSync(["docker", "network", "ls"]);`,
    `const image = TEST_IMAGES.node;`,
    // A helper that calls one of those is a marker itself (anthropicProject makes a containerProject).
    `({ anthropic, p } = await anthropicProject(KEY));`,
    `/**\n * A task its agent adds.\n * tier: docker (the agent's task_create asks the engine)\n */`,
  ])
    expect(dockerMarker(text), text).toBeDefined();
});

test("words in prose, a daemon start and a pragma saying fast keep a file in the fast tier", () => {
  for (const text of [
    "// a hanging request is cut; the task settled; Docker is not asked",
    `await p.ok(["daemon", "start"]);`,
    `await p.run(["task", "list"]);`,
    `/**\n * tier: fast (its task add is refused at the flag)\n */\nawait p.run(["task", "add", "--cdoe", "x"]);`,
  ])
    expect(dockerMarker(text), text).toBeUndefined();
});

test("a marker named only in a comment keeps a file in the fast tier: the tier is read off the code", () => {
  for (const text of [
    `/**\n * Unlike the Docker tests, this one never runs \`docker ps\` nor containerProject(mock, KEY).\n */\nawait p.ok(["daemon", "start"]);`,
    `// what launched(p, "x", "prompt") would do, without a container\nconst x = 1;`,
    `  /* TEST_IMAGES.node is not needed here */\nawait p.run(["task", "list"]);`,
  ])
    expect(dockerMarker(text), text).toBeUndefined();
  // The same markers in code still count.
  expect(dockerMarker(`// a comment\nsh("/", "docker ps -aq");`)).toBeDefined();
});

test("every test file is in exactly one tier, and no fast one asks for an engine", () => {
  const { fast, docker } = tiers();
  expect(fast.length).toBeGreaterThan(0);
  expect(docker.length).toBeGreaterThan(0);
  expect(fast.filter((f) => docker.includes(f))).toEqual([]);
  expect(fast).toContain("test/helpers/tiers.test.ts");
  expect(docker).toContain("test/containers/remote-engine.test.ts");
  for (const f of fast.filter((f) => f !== "test/helpers/tiers.test.ts"))
    expect(readFileSync(join(ROOT, f), "utf8"), f).not.toMatch(/\b(needDocker|requireDocker|containerProject)\(/);
});
