/**
 * `bun run build` writes dist/lazy for this machine; `--all` also cross-compiles the four
 * release targets (containers need the Linux build of the same version, even on a Mac).
 * Flags per docs/wire.md ("Runtime traps"): no .env/bunfig autoload from the user's folder, no whitespace minify
 * (it breaks Elysia), and the built binary is smoke-run because a bad build can exit 0.
 */
import { realpathSync } from "node:fs";
import { VERSION } from "./src/version";

const TARGETS = ["linux-x64", "linux-arm64", "darwin-arm64", "darwin-x64"] as const;
const all = process.argv.includes("--all");
const flag = (name: string) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
};
// `--as-version V --outfile P`: a build that calls itself V, somewhere else (a test's "older
// lazy" meeting this one: test/daemon/versions.test.ts). Never over dist/lazy while it runs.
const asVersion = flag("--as-version");
const outfile = flag("--outfile") ?? "dist/lazy";
const version = asVersion ?? VERSION;

/**
 * The commit this tree is, for `lazy version`: only when this very folder is the top of a git
 * checkout (a source tarball unpacked inside someone's repository must not take its commit),
 * `-dirty` when tracked files changed; "unknown" otherwise. The date is the build's own.
 */
function commitOf(dir: string): string {
  const git = (args: string[]) => {
    const r = Bun.spawnSync(["git", "-C", dir, ...args], {
      stdout: "pipe",
      stderr: "ignore",
      env: { ...process.env, GIT_DIR: undefined, GIT_WORK_TREE: undefined },
    });
    return r.exitCode === 0 ? r.stdout.toString().trim() : undefined;
  };
  const top = git(["rev-parse", "--show-toplevel"]);
  if (!top || realpathSync(top) !== realpathSync(dir)) return "unknown";
  const head = git(["rev-parse", "--short=12", "HEAD"]);
  if (!head) return "unknown";
  return git(["status", "--porcelain", "--untracked-files=no"]) ? `${head}-dirty` : head;
}
const commit = commitOf(import.meta.dir);
const built = new Date().toISOString().replace(/\.\d+Z$/, "Z");

async function compile(out: string, target?: string): Promise<void> {
  const cmd = [
    process.execPath,
    "build",
    "src/index.ts",
    "src/proxy/audit/writer.ts",
    "src/proxy/thread/entry.ts",
    "--compile",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    "--minify-syntax",
    "--minify-identifiers",
    // Start-up is most of a quick command's cost: bytecode (it needs ESM) and splitting, so a
    // command parses only the chunks it imports (the daemon's Elysia, dockerode, zod stay out).
    "--bytecode",
    "--format=esm",
    "--splitting",
    ...(asVersion ? ["--define", `LAZY_BUILD_VERSION=${JSON.stringify(asVersion)}`] : []),
    "--define",
    `LAZY_BUILD_COMMIT=${JSON.stringify(commit)}`,
    "--define",
    `LAZY_BUILD_DATE=${JSON.stringify(built)}`,
    ...(target ? [`--target=bun-${target}`] : []),
    "--outfile",
    out,
  ];
  const p = Bun.spawn(cmd, { stdout: "inherit", stderr: "inherit" });
  if ((await p.exited) !== 0) throw new Error(`bun build failed for ${target ?? "host"}`);
}

async function smoke(bin: string): Promise<void> {
  const p = Bun.spawn([bin, "--version"], { stdout: "pipe", stderr: "pipe", env: { ...process.env, LAZY_HOME: "/nonexistent-lazy-home" } });
  const out = (await new Response(p.stdout).text()).trim();
  const code = await p.exited;
  const expected = `lazy ${version} (commit ${commit}, built ${built})`;
  if (code !== 0 || out !== expected) throw new Error(`${bin} --version printed "${out}" (exit ${code}); expected ${expected}`);
}

const started = performance.now();
await compile(outfile);
await smoke(outfile);
console.error(`built ${outfile} ${version}, commit ${commit} (${Math.round(performance.now() - started)} ms)`);

if (all) {
  const host = `${process.platform}-${process.arch}`;
  for (const t of TARGETS) {
    await compile(`dist/lazy-${t}`, t);
    if (t === host) await smoke(`dist/lazy-${t}`);
    console.error(`built dist/lazy-${t}`);
  }
}
