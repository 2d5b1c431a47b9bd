/**
 * Which files of a task's branch carry configuration that acts beyond the agent's container
 * once merged: a lazy.toml at any depth (a daemon for that folder would route credentials by
 * it), `.worktreeinclude` (what host files are copied into tasks), the Dockerfile or setup
 * script lazy.toml names, any Dockerfile and every file of the named Dockerfile's build context
 * (what goes into the image and runs at build), and the harnesses' project
 * folders and files (hooks, MCP servers, extensions that lazy pair, own calls or a person's own
 * harness would load), and git's own in-tree config (.gitattributes routes files through the
 * filter, diff and merge drivers the person's git config defines, run on the host by accept's
 * merge; .lfsconfig tells git-lfs there where to fetch and send credentials). `lazy accept`
 * merges a branch touching any of them only with `--with-config`, naming each.
 *
 * Names are compared the way a case-insensitive file system (macOS) resolves them: `.Claude/`
 * or `LAZY.TOML` lands where `.claude/` or `lazy.toml` is looked for, and HFS+ ignores some
 * invisible code points in names (git's own list, utf8.c is_hfs_dotgit).
 */
import { basename, posix, relative, sep } from "node:path";
import { BuildFiles, FILE, load } from "../config";

/** Folders (at any depth) whose files a harness loads as configuration. */
const FOLDERS: Record<string, string> = {
  ".claude": "Claude Code's project settings (hooks, skills, agents)",
  ".codex": "Codex's project config",
  ".pi": "Pi's project settings and extensions",
  ".cursor": "cursor-agent's project config (hooks, MCP servers)",
  ".gemini": "Gemini CLI's project settings",
  ".vscode": "editor tasks and settings",
};

/** Files (by name, at any depth) that configure a harness or lazy. */
const FILES: Record<string, string> = {
  [FILE]: "lazy's config: where credentials go, what runs",
  ".worktreeinclude": "which untracked host files are copied into every task",
  ".mcp.json": "MCP servers a harness starts",
  ".cursorrules": "cursor-agent's rules",
  ".envrc": "direnv runs it on the host",
  ".dockerignore": "what a Docker build sees",
  ".gitattributes": "git attributes: which filter, diff and merge drivers git runs on the host (accept's merge runs them)",
  ".gitmodules": "submodules: what git fetches and checks out on the host",
  ".lfsconfig": "Git LFS config: where git-lfs on the host fetches from and sends credentials",
};

/** Code points HFS+ ignores in file names (git utf8.c): `.cl\u200caude` is `.claude` there. */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;
/** A name as a case-insensitive, HFS+-style file system finds it. */
const folded = (name: string) => name.replace(HFS_IGNORED, "").toLowerCase();
const FOLDED_FILES = new Map(Object.entries(FILES).map(([k, v]) => [folded(k), v]));

export interface ConfigFile {
  path: string;
  why: string;
}

/** The config-bearing files among `changed` (paths relative to the project root). */
export function configBearing(root: string, changed: string[]): ConfigFile[] {
  const loaded = load(root);
  const c = loaded.ok ? loaded.config.container : undefined;
  // As git names the file: `docker/./app` and `docker//app` are `docker/app`.
  const dockerfile = c?.dockerfile ? posix.normalize(c.dockerfile) : undefined;
  const setupWords = BuildFiles.setupWords(c?.setup);
  // Every file of the Dockerfile's build context goes into the image (a RUN line may run it as
  // root at the next build), when the Dockerfile copies from it: as git names paths, from the root.
  const ctx = BuildFiles.contextOfConfig(root, c?.dockerfile);
  const ctxDir = ctx?.copies ? relative(root, ctx.dir).split(sep).join("/") : undefined;
  const inContext = (path: string) => ctxDir !== undefined && (ctxDir === "" || folded(path).startsWith(`${folded(ctxDir)}/`));
  const out: ConfigFile[] = [];
  for (const path of changed) {
    const name = folded(basename(path));
    const folder = path.split("/").find((seg) => Object.hasOwn(FOLDERS, folded(seg)));
    const why =
      FOLDED_FILES.get(name) ??
      (folder ? FOLDERS[folded(folder)] : undefined) ??
      (path === dockerfile ? "the Dockerfile [container] dockerfile names" : undefined) ??
      (setupWords.has(path) ? "run by [container] setup" : undefined) ??
      (inContext(path)
        ? `in the build context of ${dockerfile}: goes into the task image, and a RUN line may run it at build`
        : undefined) ??
      (/^dockerfile/i.test(name) || /\.dockerfile$/i.test(name) ? "a Dockerfile" : undefined);
    if (why) out.push({ path, why });
  }
  return out;
}
