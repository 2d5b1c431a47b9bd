/**
 * The repository as a task's container sees it: never the person's checkout (a git-ignored
 * `.env` beside the code, uncommitted edits) and never the whole git folder (its config can
 * carry a remote's token or CI's `http.extraheader`; the main checkout's index, other
 * worktrees, hooks), only what git needs to work in the task's worktree. At the git folder's
 * own path the container gets a folder lazy writes before each turn (`view`, mounted
 * read-only): a config holding only the repository's format and checkout settings, HEAD,
 * packed-refs without other tasks' branches, shallow, info/exclude. Over it: the repository's
 * refs read-only, the task's private ref, log and objects stand-ins, and the objects read-only
 * through the private objects' alternates. A git-ignored file reaches a task only through
 * .worktreeinclude, copied into its worktree.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import * as AgentDir from "../agent-dir";
import { readRegularBytes } from "../util/bounded-read";
import { gitAsync } from "./run";

/** A file of the view: its path under the git folder and its bytes. */
export interface ViewFile {
  rel: string;
  data: Uint8Array;
}

/** Folders of the view that are mount points (what is mounted there comes from elsewhere). */
export const VIEW_DIRS = ["objects", "refs", "logs/refs/heads/lazy", "info"] as const;

/** Config keys a worktree needs to read the repository and check files out as the person's git does; nothing else travels. */
const KEYS =
  /^(core\.(repositoryformatversion|bare|filemode|symlinks|ignorecase|precomposeunicode|autocrlf|eol|safecrlf|logallrefupdates|abbrev)|extensions\.[a-z]+)$/;
/** A value that needs no quoting in a git config file. */
const PLAIN = /^[A-Za-z0-9._-]{1,64}$/;
/** packed-refs and shallow can be large in a repository with many tags; past this they are left out (git then sees loose refs only). */
const MAX_FILE = 64 * 1024 * 1024;

/** The repository's config reduced to KEYS, as a config file. */
async function config(common: string): Promise<string> {
  const file = join(common, "config");
  if (!existsSync(file)) return "";
  const r = await gitAsync(common, ["config", "--file", file, "--list", "-z"], { allowFail: true });
  const sections = new Map<string, string[]>();
  for (const entry of r.out.split("\0")) {
    const nl = entry.indexOf("\n");
    const key = (nl < 0 ? entry : entry.slice(0, nl)).toLowerCase();
    const value = nl < 0 ? "true" : entry.slice(nl + 1);
    if (!KEYS.test(key) || !PLAIN.test(value)) continue;
    const [section, name] = key.split(".") as [string, string];
    sections.set(section, [...(sections.get(section) ?? []).filter((l) => !l.startsWith(`\t${name} =`)), `\t${name} = ${value}`]);
  }
  return [...sections].map(([s, lines]) => `[${s}]\n${lines.join("\n")}\n`).join("");
}

/** A file of the git folder as it is, or null when missing, not a plain file or too large. */
function plain(common: string, rel: string, max = MAX_FILE): Buffer | null {
  const file = join(common, rel);
  if (!existsSync(file)) return null;
  const r = readRegularBytes(file, max, { follow: false });
  return "bytes" in r ? r.bytes : null;
}

/** packed-refs without lazy's task branches (another task's name and tip are not this one's to see). */
function packedRefs(data: Buffer): Buffer {
  const out: string[] = [];
  let dropping = false;
  for (const line of data.toString("utf8").split("\n")) {
    if (line.startsWith("^")) {
      if (!dropping) out.push(line);
      continue;
    }
    dropping = / refs\/heads\/lazy\//.test(line);
    if (!dropping) out.push(line);
  }
  return Buffer.from(out.join("\n"));
}

/** The view's files for the git folder at `common`. */
export async function viewFiles(common: string): Promise<ViewFile[]> {
  const out: ViewFile[] = [{ rel: "config", data: Buffer.from(await config(common)) }];
  const head = plain(common, "HEAD", 4096);
  out.push({
    rel: "HEAD",
    data: head && /^(ref: refs\/\S+|[0-9a-f]{40,64})\n?$/.test(head.toString()) ? head : Buffer.from("ref: refs/heads/main\n"),
  });
  const packed = plain(common, "packed-refs");
  if (packed) out.push({ rel: "packed-refs", data: packedRefs(packed) });
  // A shallow clone (CI's checkout) needs its shallow list, or git looks for parents it never fetched.
  for (const rel of ["shallow", "info/exclude"]) {
    const data = plain(common, rel, rel === "shallow" ? MAX_FILE : 1024 * 1024);
    if (data) out.push({ rel, data });
  }
  return out;
}

/**
 * Write the view into `view` (lazy's own folder in the task's state; the container sees it
 * read-only): its files afresh, and the mount points for what goes over it.
 */
export async function writeView(common: string, view: string): Promise<void> {
  const files = await viewFiles(common);
  mkdirSync(view, { recursive: true, mode: 0o755 });
  for (const d of VIEW_DIRS) AgentDir.mkdir(view, d, { mode: 0o755 });
  const keep = new Set(files.map((f) => f.rel));
  for (const rel of ["packed-refs", "shallow", "info/exclude"]) if (!keep.has(rel)) AgentDir.unlink(view, rel);
  for (const f of files) AgentDir.write(view, f.rel, f.data, { mode: 0o644 });
}
