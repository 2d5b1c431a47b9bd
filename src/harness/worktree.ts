/**
 * Reading what a task's worktree carries before a harness is started there on the host (lazy
 * pair). The agent wrote that tree, so it is read like every agent-written folder: one name at
 * a time, no link followed, regular files only, bounded (agent-dir/). Each adapter uses
 * these to say what its harness would load from the folder (see `inspect` in types.ts).
 */
import * as AgentDir from "../agent-dir";

/** A settings file larger than this is not read: no harness setting needs that much. */
const MAX_SETTINGS = 1024 * 1024;

export type Kind = "missing" | "file" | "folder" | "link" | "special";

/**
 * What is at `rel` below the worktree, looked at one name at a time: a link on the way reads as
 * a link (a harness would follow it), a file on the way as missing (nothing can be below it).
 */
export function kind(worktree: string, rel: string): Kind {
  const parts = rel.split("/").filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const st = AgentDir.lstat(worktree, parts.slice(0, i).join("/"));
    if (!st) return "missing";
    if (st.isSymbolicLink()) return "link";
    if (i === parts.length) return st.isDirectory() ? "folder" : st.isFile() ? "file" : "special";
    if (!st.isDirectory()) return "missing";
  }
  return "folder";
}

/** The names in the folder `rel`, sorted; none when it is missing or not a plain folder. */
export function names(worktree: string, rel: string): string[] {
  return kind(worktree, rel) === "folder" ? AgentDir.list(worktree, rel).sort() : [];
}

export type Json = { ok: true; value: Record<string, unknown> } | { ok: false; why: string };

/** The JSON object in the file `rel`, or why it could not be read; null when missing. */
export function json(worktree: string, rel: string): Json | null {
  const k = kind(worktree, rel);
  if (k === "missing") return null;
  if (k !== "file") return { ok: false, why: k === "link" ? "a link" : k === "folder" ? "a folder" : "not a regular file" };
  const got = AgentDir.read(worktree, rel, { max: MAX_SETTINGS });
  if (!got) return null;
  if (got.size > MAX_SETTINGS) return { ok: false, why: `over ${MAX_SETTINGS} bytes` };
  try {
    const value: unknown = JSON.parse(got.data.toString("utf8"));
    if (value && typeof value === "object" && !Array.isArray(value)) return { ok: true, value: value as Record<string, unknown> };
    return { ok: false, why: "not a JSON object" };
  } catch {
    return { ok: false, why: "not valid JSON" };
  }
}

/** `rel (what)`: the settings file and the keys it sets, or why it was not read. */
export function describe(rel: string, found: Json): string {
  if (!found.ok) return `${rel} (${found.why})`;
  const keys = Object.keys(found.value);
  const shown = keys.slice(0, 6).join(", ") + (keys.length > 6 ? `, +${keys.length - 6} more` : "");
  return keys.length ? `${rel} (${shown})` : rel;
}

/** Each entry of the folder `rel` as `rel/name` (a folder's entries are not listed one by one). */
export function entries(worktree: string, rel: string): string[] {
  return names(worktree, rel).map((n) => `${rel}/${n}`);
}

/** Names the agent chose, made safe to print: no control characters (a terminal escape), bounded. */
export function printable(s: string): string {
  // biome-ignore lint: control characters are what this removes
  const t = s.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, "?");
  return t.length > 300 ? `${t.slice(0, 299)}…` : t;
}
