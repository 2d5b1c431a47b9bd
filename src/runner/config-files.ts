/**
 * Which files of a task's branch carry configuration that acts beyond the agent's container
 * once merged: a lazy.toml at any depth (a daemon for that folder would route credentials by
 * it), `.worktreeinclude` (what host files are copied into tasks), the Dockerfile or setup
 * script lazy.toml names and any Dockerfile (what runs at build), and the harnesses' project
 * folders and files (hooks, MCP servers, extensions that lazy pair, own calls or a person's own
 * harness would load). `lazy accept` merges a branch touching any of them only with
 * `--with-config`, naming each.
 */
import { basename } from "node:path";
import { load, FILE } from "../config";

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
};

export interface ConfigFile {
  path: string;
  why: string;
}

/** The config-bearing files among `changed` (paths relative to the project root). */
export function configBearing(root: string, changed: string[]): ConfigFile[] {
  const loaded = load(root);
  const c = loaded.ok ? loaded.config.container : undefined;
  const dockerfile = c?.dockerfile?.replace(/^\.\//, "");
  const setupWords = new Set((c?.setup ?? "").split(/[\s;&|()<>'"`=]+/).map((w) => w.replace(/^\.\//, "")));
  const out: ConfigFile[] = [];
  for (const path of changed) {
    const name = basename(path);
    const folder = path.split("/").find((seg) => seg in FOLDERS);
    const why =
      FILES[name] ??
      (folder ? FOLDERS[folder] : undefined) ??
      (path === dockerfile ? "the Dockerfile [container] dockerfile names" : undefined) ??
      (setupWords.has(path) ? "run by [container] setup" : undefined) ??
      (/^dockerfile/i.test(name) || /\.dockerfile$/i.test(name) ? "a Dockerfile" : undefined);
    if (why) out.push({ path, why });
  }
  return out;
}
