/**
 * Where a plugin may be loaded from: only the lazy home's `plugins` folder, which no container
 * mounts. A file in the project (every task container mounts it, and an agent can write its
 * worktree and propose it in a branch), a link leading out of the folder, a file another user
 * owns or can write, or a missing file is refused, naming it and why, before anything imports it.
 */
import { lstatSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import type { Plugin } from "../../config";
import type { Spec } from "./types";

/** The folder plugins are installed in. */
export const folder = (home: string) => join(home, "plugins");

const inside = (dir: string, file: string) => {
  const r = relative(dir, file);
  return r !== "" && !r.startsWith(`..${sep}`) && r !== ".." && !isAbsolute(r);
};

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** Each configured plugin as a file to load, or the reason it is refused. */
export function resolve(plugins: readonly Plugin[], home: string, root: string): Spec[] {
  return plugins.map((p) => {
    const refused = (why: string): Spec => ({ name: p.name, refused: why, timeoutMs: p.timeout_ms });
    const dir = folder(home);
    const given = p.path.startsWith("~/") ? join(process.env.HOME ?? "", p.path.slice(2)) : p.path;
    const path = isAbsolute(given) ? given : join(dir, given);
    const projectRoot = real(root) ?? root;
    const file = real(path);
    if (inside(projectRoot, path) || (file && inside(projectRoot, file)))
      return refused(`${path} is inside the project, which every task container mounts: install it under ${dir}`);
    if (!file) return refused(`${path} does not exist: install the plugin under ${dir}`);
    const realDir = real(dir) ?? dir;
    if (!inside(realDir, file)) return refused(`${path} is not under ${dir}: lazy loads plugins only from there`);
    const st = statSync(file);
    if (!st.isFile()) return refused(`${path} is not a regular file`);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) return refused(`${path} belongs to another user (uid ${st.uid})`);
    if (st.mode & 0o022) return refused(`${path} can be written by others (mode ${(st.mode & 0o777).toString(8)}): chmod go-w it`);
    // The folders between the plugins folder and the file must not be others' to write either.
    for (let d = join(file, ".."); inside(realDir, d) || d === realDir; d = join(d, "..")) {
      const ds = lstatSync(d);
      if (ds.mode & 0o022) return refused(`${d} can be written by others: chmod go-w it`);
      if (d === realDir) break;
    }
    return { name: p.name, file, timeoutMs: p.timeout_ms };
  });
}
