/**
 * Where lazy keeps its state: `~/.lazy` (moved by LAZY_HOME), and per project
 * `~/.lazy/daemon/<slug>/`, the slug derived from the project root's real path.
 */

import { createHash } from "node:crypto";
import { existsSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";

export function lazyHome(): string {
  return process.env.LAZY_HOME ? resolve(process.env.LAZY_HOME) : join(homedir(), ".lazy");
}

/** `myapp-1a2b3c4d`: readable, and unique per real path (two checkouts named alike differ). */
export function projectSlug(root: string): string {
  const real = realpathSync(root);
  const name =
    basename(real)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40) || "root";
  const hash = createHash("sha256").update(real).digest("hex").slice(0, 8);
  return `${name}-${hash}`;
}

/** The file, in a daemon's state folder, that keeps the model proxy's port on each gateway (proxy/main/ports.ts; the keeper holds them). */
export const GATEWAY_PORTS_FILE = "gateway-ports.json";

export function stateDir(root: string): string {
  return join(lazyHome(), "daemon", projectSlug(root));
}

/**
 * The project root: the nearest folder upward holding lazy.toml or .git (whichever comes
 * first), else the current folder. LAZY_PROJECT pins it (tests, scripts).
 */
export function findProjectRoot(start = process.cwd()): string {
  if (process.env.LAZY_PROJECT) return realpathSync(process.env.LAZY_PROJECT);
  let dir = realpathSync(start);
  for (;;) {
    if (existsSync(join(dir, "lazy.toml"))) return dir;
    if (existsSync(join(dir, ".git"))) return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return realpathSync(start);
}
