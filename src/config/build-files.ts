/**
 * The files of the checkout that go into a task image or a task besides lazy.toml, all of them
 * trust-bearing (trust.ts): the build context of the project Dockerfile (what git tracks or would
 * track under its folder, when the Dockerfile COPYs or ADDs from it: a `RUN ./prep.sh` runs
 * them as root at the next build), the files `[container] setup` names, and `.worktreeinclude`
 * (which of the person's ignored files every task gets). Each is known by its path from the
 * project's root and a digest of what is built: the mode the build gives it (755 or 644) and
 * the sha256 of its bytes. Modification times play no part: a pull or a merge that writes the
 * same bytes changes nothing, and one that keeps the size and time of a file it rewrote is seen.
 */
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { join, posix, relative, resolve } from "node:path";
import * as Git from "../git";
import { readRegular, readRegularBytes } from "../util/bounded-read";
import { LazyError } from "../util/errors";

/** The most a Dockerfile's build context may hold: it is read into memory and sent whole. */
export const CONTEXT_MAX_BYTES = 512 * 1024 * 1024;
/** The most a file [container] setup names may hold (a script): a larger one stands in by its size. */
const SETUP_FILE_MAX = 16 * 1024 * 1024;
export const INCLUDE_FILE = ".worktreeinclude";

/** One file of a build context: its path from the root, its name in the context, bytes and mode as built. */
export interface ContextFile {
  path: string;
  name: string;
  bytes: Uint8Array;
  executable: boolean;
}

/** What `lazy trust` records of the files beside lazy.toml: each path with its digest. */
export interface BuildFiles {
  /** The Dockerfile's build context (null: no project Dockerfile, or one that copies nothing from it). */
  context: { dir: string; files: { [path: string]: string } } | null;
  /** The files [container] setup names. */
  setup: { [path: string]: string };
  /** .worktreeinclude's digest, null when there is none. */
  include: string | null;
}

/** How a .worktreeinclude that cannot be read as a plain file is recorded, before the reason. */
export const NOT_PLAIN = "not a plain file: ";

const sha = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");

/** A file as built: its mode in the build (executables 755, the rest 644) and the sha256 of its bytes. */
export const digest = (bytes: Uint8Array, executable: boolean): string => `${executable ? "755" : "644"}:${sha(bytes)}`;

/** Whether a Dockerfile takes files from its build context (a COPY or ADD not from another stage). */
export function copiesContext(dockerfile: string): boolean {
  return /^[ \t]*(COPY|ADD)[ \t]+(?!.*--from=)/im.test(dockerfile);
}

/** The files of a build context, as paths from the project's root: what git tracks or would track under `dir`. */
export async function contextPaths(root: string, dir: string): Promise<string[]> {
  const rel = relative(root, dir);
  const out = await Git.gitBytes(
    root,
    ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel ? `:(literal)${rel}` : "."],
    64 * 1024 * 1024,
  );
  if (out === null)
    throw new LazyError(
      "launch_refused",
      `git could not list the files of the Docker build context (${dir}). Run git status there to see why.`,
    );
  if (out === "over")
    throw new LazyError(
      "launch_refused",
      `The Docker build context (${dir}) names over 64 MiB of file paths. Move the Dockerfile into a folder of its own with what it copies.`,
    );
  return [...new Set(Buffer.from(out).toString("utf8").split("\0").filter(Boolean))].sort();
}

/**
 * The build context's files as the build gets them: regular files only (a link, tracked or
 * swapped in, could name any file of the host; a submodule is a folder), each read once, 512 MiB
 * in all.
 */
export async function readContext(root: string, dir: string): Promise<ContextFile[]> {
  const out: ContextFile[] = [];
  let total = 0;
  for (const path of await contextPaths(root, dir)) {
    const full = join(root, path);
    const name = relative(dir, full);
    const read = existsSync(full) ? readRegularBytes(full, CONTEXT_MAX_BYTES - total, { follow: false }) : undefined;
    if (!read) continue; // deleted since it was listed
    if ("why" in read) {
      if (!read.larger) continue; // a link, a submodule, a nested repository
      throw new LazyError(
        "launch_refused",
        `The Docker build context (${dir}) holds over ${CONTEXT_MAX_BYTES / 1024 / 1024} MiB of files git tracks or would track (the limit was reached at ${name}). Move the Dockerfile into a folder of its own with what it copies, or add the large files to .gitignore.`,
      );
    }
    total += read.bytes.length;
    out.push({ path, name, bytes: read.bytes, executable: (read.mode & 0o111) !== 0 });
  }
  return out;
}

/** The digests of a context as read (readContext). */
export const contextDigests = (files: ContextFile[]): { [path: string]: string } =>
  Object.fromEntries(files.map((f) => [f.path, digest(f.bytes, f.executable)]));

/** The files [container] setup names: each word that is a regular file of the project (paths from the root). */
export function setupFiles(root: string, setup: string | undefined): { [path: string]: string } {
  const out: { [path: string]: string } = {};
  for (const w of setupWords(setup)) {
    const full = resolve(root, w);
    if (relative(root, full).startsWith("..") || !existsSync(full)) continue;
    let read: ReturnType<typeof readRegularBytes>;
    try {
      read = readRegularBytes(full, SETUP_FILE_MAX, { follow: false });
    } catch {
      continue; // a folder, or gone since
    }
    const path = relative(root, full);
    if ("bytes" in read) out[path] = digest(read.bytes, (read.mode & 0o111) !== 0);
    else if (read.larger) out[path] = `larger than ${SETUP_FILE_MAX} bytes`;
    else if (read.why === "is a link") out[path] = "a link";
  }
  return out;
}

/** The words of [container] setup that could name a file, as git names paths (`./x` is `x`). */
export function setupWords(setup: string | undefined): Set<string> {
  return new Set(
    (setup ?? "")
      .split(/[\s;&|()<>'"`=]+/)
      .filter(Boolean)
      .map((w) => posix.normalize(w)),
  );
}

/** .worktreeinclude's digest (what it says decides which ignored files every task gets), null when there is none. */
export function includeDigest(root: string): string | null {
  const file = join(root, INCLUDE_FILE);
  if (!existsSync(file)) return null;
  const read = readRegular(file, 64 * 1024);
  return "text" in read ? sha(read.text) : `${NOT_PLAIN}${read.why}`;
}

/** The project Dockerfile's context folder and whether it copies from it (null without a readable project Dockerfile). */
export function contextOfConfig(root: string, dockerfile: string | undefined): { dir: string; copies: boolean } | null {
  if (!dockerfile) return null;
  const file = resolve(root, dockerfile);
  if (!existsSync(file)) return null;
  const read = readRegular(file, 1024 * 1024);
  if (!("text" in read)) return null;
  const dir = resolve(file, "..");
  if (relative(root, dir).startsWith("..")) return null;
  return { dir, copies: copiesContext(read.text) };
}

/** Every trust-bearing file beside lazy.toml as it is now (what `lazy trust` records). */
export async function current(root: string, container: { dockerfile?: string; setup?: string }): Promise<BuildFiles> {
  const ctx = contextOfConfig(root, container.dockerfile);
  return {
    context: ctx?.copies ? { dir: relative(root, ctx.dir), files: contextDigests(await readContext(root, ctx.dir)) } : null,
    setup: setupFiles(root, container.setup),
    include: includeDigest(root),
  };
}

/** What differs between two records of one kind of file: each path, and whether it changed, was added or removed. */
export function changes(
  before: { [path: string]: string } | undefined,
  now: { [path: string]: string },
): { path: string; how: "changed" | "added" | "removed" }[] {
  const out: { path: string; how: "changed" | "added" | "removed" }[] = [];
  const was = before ?? {};
  for (const [p, d] of Object.entries(now))
    if (!(p in was)) out.push({ path: p, how: "added" });
    else if (was[p] !== d) out.push({ path: p, how: "changed" });
  for (const p of Object.keys(was)) if (!(p in now)) out.push({ path: p, how: "removed" });
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}
