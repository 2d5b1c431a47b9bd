/**
 * The test suite's two tiers, decided by each file's own text (no list to keep): a test file
 * that names a Docker fixture, adds or launches a task, runs `docker`, or calls a helper that
 * does one of these is in the docker tier; every other one is in the fast tier, which `bun run test:fast` (scripts/test-fast.ts) runs with no
 * engine in reach. A new file that uses the fixtures lands in the docker tier by itself; one that
 * reaches Docker another way fails in the fast tier (DOCKER_HOST points nowhere there, and
 * helpers/env.ts `needDocker` says which tier it is in): name a fixture, or say `tier: docker`
 * (PRAGMA below).
 *   bun scripts/test-tiers.ts [fast|docker|helpers]   prints that tier's files (or the helpers
 *   that reach an engine), one a line
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "..");

/**
 * What needs an engine: the container fixtures (helpers/fixtures.ts, helpers/env.ts,
 * helpers/second-engine.ts), a task's turn (launched, settled, …: a turn runs in a container),
 * adding a task at all (`task add`, `lazy run`, a group: lazy's preflight asks the engine first)
 * and the docker CLI itself (`"docker"` as a command, `docker -H`, `docker ps`…).
 */
const DOCKER =
  /\b(containerProject|dockerAnthropic|needDocker|requireDocker|launched|launchedStatus|settled|settledAs|inFlight|hanging|startsOk|acceptRefused|removeContainers|handMadeGroup)\(|\bTEST_IMAGES\b|second-engine|"task", "add"|\["run"|["'`]docker["'` ]|\bdocker (-H|ps|run|exec|rm|inspect|image|network|volume|build|save|load|cp|start|stop|kill|logs|info)\b/;

/** Text without its comments (a helper's doc may name a marker it does not use). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

/**
 * The helpers (test/helpers/*.ts) that reach an engine themselves, by name: a top-level function
 * or const whose code names a marker, or calls such a helper. A helper added later that adds a
 * task marks its callers at once, with no list to keep. Classes are left out: Project's cleanup
 * removes what a test left on an engine, if there is one, and needs none.
 */
function dockerHelpers(): string[] {
  const dir = join(ROOT, "test", "helpers");
  const blocks: { name: string; body: string }[] = [];
  for (const n of readdirSync(dir).filter((n) => n.endsWith(".ts") && !n.endsWith(".test.ts"))) {
    for (const part of code(readFileSync(join(dir, n), "utf8")).split(/\n(?=(?:export )?(?:async )?(?:function|const|class) )/)) {
      const m = /^(?:export )?(?:async )?(?:function\*? |const )(\w+)/.exec(part);
      if (m) blocks.push({ name: m[1]!, body: part });
    }
  }
  const names = new Set<string>();
  for (let grew = true; grew; ) {
    grew = false;
    const calls = names.size ? new RegExp(`\\b(${[...names].join("|")})\\(`) : undefined;
    for (const b of blocks)
      if (!names.has(b.name) && (DOCKER.test(b.body) || calls?.test(b.body))) {
        names.add(b.name);
        grew = true;
      }
  }
  return [...names].sort();
}

let derived: RegExp | undefined;

function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      return statSync(p).isDirectory() ? testFiles(p) : /\.test\.tsx?$/.test(n) ? [p] : [];
    });
}

export type Tier = "fast" | "docker";

/**
 * A file whose text misleads the markers says its tier in a comment line of its own, with why:
 * `tier: docker` (it reaches the engine in a way no marker shows: a task its agent adds) or
 * `tier: fast` (a marker it names never reaches the engine: a `task add` refused at the flag).
 */
const PRAGMA = /^\s*(\/\/|\*)\s*tier: (docker|fast)\b/m;

/** Why a file is in the docker tier (its pragma, or the first marker its code names), or undefined for the fast tier. */
export function dockerMarker(text: string): string | undefined {
  const said = PRAGMA.exec(text)?.[2];
  if (said) return said === "docker" ? "tier: docker" : undefined;
  derived ??= new RegExp(`\\b(${dockerHelpers().join("|") || "(?!)"})\\(`);
  // Markers in code only: a comment saying a file does not run `docker ps` does not make it run it.
  const c = code(text);
  return DOCKER.exec(c)?.[0] ?? derived.exec(c)?.[0];
}

/** Every test file (relative to the repository), in its tier. */
export function tiers(): Record<Tier, string[]> {
  const out: Record<Tier, string[]> = { fast: [], docker: [] };
  for (const f of testFiles(join(ROOT, "test"))) out[dockerMarker(readFileSync(f, "utf8")) ? "docker" : "fast"].push(relative(ROOT, f));
  return out;
}

if (import.meta.main) {
  const which = (process.argv[2] ?? "fast") as Tier;
  if (which === ("helpers" as Tier)) {
    console.log(dockerHelpers().join("\n"));
    process.exit(0);
  }
  if (which !== "fast" && which !== "docker") {
    console.error("usage: bun scripts/test-tiers.ts [fast|docker]");
    process.exit(2);
  }
  console.log(tiers()[which].join("\n"));
}
