/**
 * `bun run build` writes dist/lazy for this machine; `--all` also cross-compiles the four
 * release targets (containers need the Linux build of the same version, even on a Mac).
 * Flags per TRAPS.md: no .env/bunfig autoload from the user's folder, no whitespace minify
 * (it breaks Elysia), and the built binary is smoke-run because a bad build can exit 0.
 */
import { VERSION } from "./src/version";

const TARGETS = ["linux-x64", "linux-arm64", "darwin-arm64", "darwin-x64"] as const;
const all = process.argv.includes("--all");

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
  if (code !== 0 || out !== VERSION) throw new Error(`${bin} --version printed "${out}" (exit ${code}); expected ${VERSION}`);
}

const started = performance.now();
await compile("dist/lazy");
await smoke("dist/lazy");
console.error(`built dist/lazy ${VERSION} (${Math.round(performance.now() - started)} ms)`);

if (all) {
  const host = `${process.platform}-${process.arch}`;
  for (const t of TARGETS) {
    await compile(`dist/lazy-${t}`, t);
    if (t === host) await smoke(`dist/lazy-${t}`);
    console.error(`built dist/lazy-${t}`);
  }
}
