/**
 * `bun run build` writes dist/lazy for this machine; `--all` also cross-compiles the four
 * release targets (containers need the Linux build of the same version, even on a Mac).
 * Flags per TRAPS.md: no .env/bunfig autoload from the user's folder, no whitespace minify
 * (it breaks Elysia), and the built binary is smoke-run because a bad build can exit 0.
 */
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
  if (code !== 0 || out !== version) throw new Error(`${bin} --version printed "${out}" (exit ${code}); expected ${version}`);
}

const started = performance.now();
await compile(outfile);
await smoke(outfile);
console.error(`built ${outfile} ${version} (${Math.round(performance.now() - started)} ms)`);

if (all) {
  const host = `${process.platform}-${process.arch}`;
  for (const t of TARGETS) {
    await compile(`dist/lazy-${t}`, t);
    if (t === host) await smoke(`dist/lazy-${t}`);
    console.error(`built dist/lazy-${t}`);
  }
}
