/**
 * Build-time helpers, run as Bun macros (`with { type: "macro" }`): when `bun build` compiles
 * the binary (or bun runs the source), the client script is bundled for the browser and the
 * stylesheet read, and both land in the code as strings. So the assets are in the one
 * executable and nothing is read from disk or another origin at run time. Bun.build cannot
 * run inside a macro (the bundler waits on it): the CLI bundler runs as a child instead.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export function clientScript(): string {
  const entry = join(import.meta.dir, "client", "app.ts");
  const r = Bun.spawnSync([process.execPath, "build", entry, "--target=browser", "--format=esm", "--minify"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`bundling the dashboard's client failed:\n${r.stderr.toString()}`);
  return r.stdout.toString();
}

export function stylesheet(): string {
  // Comments and indentation are for people; the browser gets the rest.
  return readFileSync(join(import.meta.dir, "style.css"), "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\n\s+/g, "\n")
    .trim();
}
