/**
 * `bun run test:fast`: every test that needs no Docker engine (scripts/test-tiers.ts says which),
 * with none in reach: DOCKER_HOST points at a socket that does not exist, so a file that reaches
 * Docker without naming a fixture fails here instead of passing on a machine that has one. Builds
 * dist/lazy first only when it is missing, older than its sources or from another commit (most
 * of these tests drive the binary). Writes test-artifacts/junit-fast.xml and prints each file's
 * time, the skipped tests and the files that reached for Docker, then the wall time. Flags
 * go to bun test (`bun run test:fast -t name`); files and folders narrow the run to the fast
 * tier's files among them (`bun run test:fast test/proxy test/util/errors.test.ts`), naming each
 * docker-tier file left out and why (`bun scripts/test.sh FILE` runs it).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { dockerMarker, tiers } from "./test-tiers";

const ROOT = resolve(import.meta.dir, "..");
const BIN = join(ROOT, "dist", "lazy");
/** Where the fast tier's Docker is: nowhere, and the path says why. */
export const NO_ENGINE = "unix:///nonexistent/lazy-test-fast-tier-has-no-docker-engine.sock";

function newest(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(s.mtimeMs, ...readdirSync(path).map((n) => newest(join(path, n))));
}

/** Why dist/lazy must be built again, or undefined: missing, older than its sources, or from another commit (it says its commit; tests check it). */
function stale(): string | undefined {
  if (!existsSync(BIN)) return "is missing";
  const sources = ["src", "build.ts", "package.json", "bun.lock"].map((p) => join(ROOT, p)).filter(existsSync);
  if (Math.max(...sources.map(newest)) > statSync(BIN).mtimeMs) return "is older than its sources";
  const head = Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: ROOT }).stdout.toString().trim();
  const says = Bun.spawnSync([BIN, "--version"]).stdout.toString();
  if (head && !says.includes(head)) return `was built from another commit than HEAD (${head})`;
  return undefined;
}

/** bun test's flags whose value is the next argument (that value is no path). */
const VALUED = new Set([
  "-t",
  "--test-name-pattern",
  "--timeout",
  "--rerun-each",
  "--preload",
  "--reporter",
  "--reporter-outfile",
  "--coverage-dir",
  "--coverage-reporter",
  "--seed",
  "--max-concurrency",
]);

/** What `bun run test:fast ARGS` runs: bun test's flags, the files, and the given ones left out, with why. */
export interface Selection {
  flags: string[];
  files: string[];
  /** Docker-tier files the paths given named, each with its marker (scripts/test-tiers.ts). */
  left: { file: string; why: string }[];
  /** A path given that names no test file, in words (the run stops on it). */
  problem?: string;
}

/**
 * Split `args` into bun test's flags and paths (relative to `cwd`); with no path, the whole fast
 * tier. A path is a test file or a folder of them; its docker-tier files are left out, named.
 */
export function select(args: string[], cwd = process.cwd()): Selection {
  const flags: string[] = [];
  const paths: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("-")) paths.push(a);
    else {
      flags.push(a);
      if (VALUED.has(a) && i + 1 < args.length) flags.push(args[++i]!);
    }
  }
  const { fast, docker } = tiers();
  if (!paths.length) return { flags, files: fast, left: [] };
  const files = new Set<string>();
  const left = new Map<string, string>();
  for (const given of paths) {
    const rel = relative(ROOT, resolve(cwd, given)).replace(/\/+$/, "");
    if (!existsSync(join(ROOT, rel)))
      return { flags, files: [], left: [], problem: `${given}: no such file or folder (paths are taken from ${cwd})` };
    const under = (f: string) => rel === "" || f === rel || f.startsWith(`${rel}/`);
    const mine = fast.filter(under);
    const theirs = docker.filter(under);
    if (!mine.length && !theirs.length)
      return { flags, files: [], left: [], problem: `${given}: no test file (*.test.ts) there, in test/ of ${ROOT}` };
    for (const f of mine) files.add(f);
    for (const f of theirs) left.set(f, dockerMarker(readFileSync(join(ROOT, f), "utf8")) ?? "tier: docker");
  }
  return { flags, files: [...files], left: [...left].map(([file, why]) => ({ file, why })) };
}

if (import.meta.main) {
  const started = performance.now();
  const chosen = select(process.argv.slice(2));
  if (chosen.problem) {
    console.error(`test:fast: ${chosen.problem}`);
    process.exit(2);
  }
  for (const { file, why } of chosen.left)
    console.log(`test:fast: left out ${file}: it is in the docker tier (${why}); bash scripts/test.sh ${file} runs it`);
  if (!chosen.files.length) {
    console.error("test:fast: no fast-tier file among those given: nothing to run");
    process.exit(2);
  }
  const why = stale();
  if (why) {
    console.log(`test:fast: dist/lazy ${why}: bun run build`);
    const b = Bun.spawnSync(["bun", "run", "build"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if (b.exitCode !== 0) process.exit(b.exitCode ?? 1);
  }
  const files = chosen.files;
  /**
   * Files at once, each in its own process (bun test --parallel): most of this tier waits on
   * timers and sockets, not the CPU. LAZY_TEST_JOBS overrides.
   */
  const JOBS = Number(process.env.LAZY_TEST_JOBS ?? 4);
  const junit = join(ROOT, "test-artifacts", "junit-fast.xml");
  Bun.spawnSync(["mkdir", "-p", join(ROOT, "test-artifacts")]);
  console.log(`test:fast: ${files.length} files with no Docker engine in reach (DOCKER_HOST=${NO_ENGINE})`);
  const run = Bun.spawn(
    [
      "bun",
      "test",
      "--timeout",
      "120000",
      `--parallel=${JOBS}`,
      "--reporter=junit",
      `--reporter-outfile=${junit}`,
      ...chosen.flags,
      ...files,
    ],
    {
      cwd: ROOT,
      env: { ...process.env, DOCKER_HOST: NO_ENGINE, LAZY_TEST_TIER: "fast" },
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  const code = await run.exited;
  Bun.spawnSync(["bun", join(ROOT, "scripts", "test-report.ts"), junit], { stdout: "inherit", stderr: "inherit" });
  // A file that reached for the engine it does not have here is in the wrong tier: name it.
  const report = existsSync(junit) ? readFileSync(junit, "utf8") : "";
  const wrong = new Set<string>();
  for (const m of report.matchAll(/<testcase [^>]*file="([^"]+)"[^>]*[^/]>([\s\S]*?)<\/testcase>/g))
    if (/lazy-test-fast-tier-has-no-docker-engine|runs in the fast tier/.test(m[2]!)) wrong.add(m[1]!);
  for (const f of wrong)
    console.log(
      `test:fast: ${f} reached for Docker: name the fixture it uses, or say \`tier: docker\` in a comment (scripts/test-tiers.ts)`,
    );
  console.log(`test:fast: ${((performance.now() - started) / 1000).toFixed(1)} s wall`);
  process.exit(code);
}
