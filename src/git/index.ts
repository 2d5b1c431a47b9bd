/**
 * Git, as lazy uses it on the host: one worktree per task on its own branch (lazy/<ref>) from
 * the project's HEAD, and the moves that keep the agent away from the repository's metadata.
 *
 * Inside its container the agent sees the repository read-only except what is its own: its
 * worktree, its worktree's admin folder, a private folder standing in for refs/heads/lazy (only
 * its own branch is there), and a private object folder whose alternates point at the real,
 * read-only objects. After each turn the daemon imports the new objects (each one checked
 * against its name) and moves the task's branch in the real repository. So the agent commits
 * on its branch but cannot move other refs, edit config or hooks, delete objects, or touch
 * another task's worktree.
 */

import { createHash } from "node:crypto";
import {
  chownSync,
  closeSync,
  copyFileSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { inflateSync } from "node:zlib";
import * as AgentDir from "../agent-dir";
import { readRegular } from "../util/bounded-read";
import { LazyError } from "../util/errors";
import { git, gitAsync, gitEnv, HARDENED } from "./run";
import { writeView } from "./view";

export const BRANCH_PREFIX = "lazy/";

export { blockerMessage, changedFiles, commitsToMerge, diffStat, merge, mergeBlockers } from "./merge";
export { AGENT_TRACE_NOTES, NOTE_MAX, type Note, notesOn } from "./notes";
export { unquotePath } from "./quote";
export { type BoundedRun, git, gitAsync, gitBounded, gitBytes, gitEnv, gitRead, HARDENED } from "./run";
export { type SnapshotBounds, type SnapshotEntry, snapshot } from "./snapshot";
export { type Trailer, trailerValue, withTrailers } from "./trailers";
export { VIEW_DIRS, type ViewFile, viewFiles, writeView } from "./view";

export function commonDir(root: string): string {
  return join(root, git(root, ["rev-parse", "--git-common-dir"]).out.trim()).replace(/\/\.$/, "");
}

const NO_COMMIT = (root: string) =>
  new LazyError(
    "launch_refused",
    `The project at ${root} has no commit yet; a task's worktree starts from HEAD, so commit something first.`,
  );

export function head(root: string): { branch: string | null; commit: string } {
  const commit = git(root, ["rev-parse", "--verify", "HEAD"], { allowFail: true });
  if (commit.code !== 0) throw NO_COMMIT(root);
  const b = git(root, ["symbolic-ref", "--quiet", "--short", "HEAD"], { allowFail: true });
  return { branch: b.code === 0 ? b.out.trim() : null, commit: commit.out.trim() };
}

export interface TaskGit {
  branch: string;
  worktree: string;
  /** The worktree's own HEAD, index and logs: <taskDir>/git/admin (older tasks: <common>/worktrees/<name>). */
  adminDir: string;
  commonDir: string;
  /** Private stand-ins mounted over the repository's own in the container. */
  privateRefs: string;
  privateLogs: string;
  privateObjects: string;
  /** What the container sees at the git folder's path (view.ts): lazy's, read-only there. */
  view: string;
}

const LEGACY_ADMIN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

/** Where a task's admin folder goes: in the task's own state, not in the project's .git. */
export const adminDirOf = (taskDir: string) => join(taskDir, "git", "admin");

/**
 * The task's git layout from lazy's own records: the project's common folder (asked of git in
 * the project root, which the agent cannot write) and the admin folder lazy recorded when it
 * made the worktree. Never from git run inside the agent-written worktree: its .git file is the
 * agent's to rewrite, and pointed at the project's own .git it once got that folder chowned
 * and mounted read-write. `admin` is the recorded path, or (tasks made before the record) the
 * name of a folder under <common>/worktrees.
 */
export function layout(root: string, worktree: string, taskDir: string, ref: string, admin: string, common = commonDir(root)): TaskGit {
  let adminDir: string;
  if (admin === adminDirOf(taskDir)) adminDir = admin;
  else if (LEGACY_ADMIN.test(admin)) adminDir = join(common, "worktrees", admin);
  else
    throw new LazyError(
      "internal",
      `lazy's record of the worktree's admin folder ("${admin}") is neither the task's own nor a folder name`,
    );
  const st = lstatSync(adminDir, { throwIfNoEntry: false });
  if (!st?.isDirectory())
    throw new LazyError(
      "conflict",
      `The task's git admin folder ${adminDir} is missing; the worktree cannot be used. Close the task (lazy close) and start a new one.`,
    );
  return {
    branch: `${BRANCH_PREFIX}${ref}`,
    worktree,
    adminDir,
    commonDir: common,
    privateRefs: join(taskDir, "git", "refs"),
    privateLogs: join(taskDir, "git", "logs"),
    privateObjects: join(taskDir, "git", "objects"),
    view: join(taskDir, "git", "common"),
  };
}

/** A worktree made before lazy recorded its admin folder: git's name for it, if there is one. */
export function legacyAdmin(root: string, worktree: string): string | null {
  if (!existsSync(worktree)) return null;
  const name = basename(worktree);
  return LEGACY_ADMIN.test(name) && lstatSync(join(commonDir(root), "worktrees", name), { throwIfNoEntry: false })?.isDirectory()
    ? name
    : null;
}

/**
 * Create the task's worktree if lazy has no record of one (`admin` null), and the private
 * folders that stand in for the repo's. The worktree is linked to the project the way git
 * links one (a .git file naming an admin folder whose commondir is the project's), but its
 * admin folder lives in the task's state: nothing in the project's .git is made, chowned or
 * mounted writable for it. Ownership goes to the agent's uid only here, on a tree lazy has
 * just made and no container has seen; later turns chown nothing the agent could have replaced.
 * Its git runs without blocking the daemon (gitAsync): the candidates of a group make theirs at once.
 */
export async function ensureWorktree(
  root: string,
  worktree: string,
  taskDir: string,
  ref: string,
  agentUid: number | null,
  admin: string | null,
): Promise<TaskGit> {
  const branch = `${BRANCH_PREFIX}${ref}`;
  const owner = agentUid ?? undefined;
  const fresh = admin === null;
  mkdirSync(join(taskDir, "git"), { recursive: true, mode: 0o700 });
  // The project's common folder, asked of git in the project root, alongside the first steps.
  const common = gitAsync(root, ["rev-parse", "--git-common-dir"]).then((r) => join(root, r.out.trim()).replace(/\/\.$/, ""));
  common.catch(() => {}); // awaited below; a refusal first must not leave it unhandled
  if (fresh) {
    const [commit, exists] = await Promise.all([
      gitAsync(root, ["rev-parse", "--verify", "HEAD"], { allowFail: true }),
      gitAsync(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`], { allowFail: true }),
    ]);
    if (commit.code !== 0) throw NO_COMMIT(root);
    mkdirSync(dirname(worktree), { recursive: true, mode: 0o700 });
    // Left by a launch that failed before lazy recorded the worktree, so before any container.
    rmSync(worktree, { recursive: true, force: true });
    if (exists.code !== 0) await gitAsync(root, ["branch", branch, commit.out.trim()]);
    admin = adminDirOf(taskDir);
    rmSync(admin, { recursive: true, force: true }); // a half-made one from a launch that failed
    mkdirSync(admin, { mode: 0o755 });
    mkdirSync(worktree, { mode: 0o755 });
    writeFileSync(join(admin, "HEAD"), `ref: refs/heads/${branch}\n`);
  }
  const t = layout(root, worktree, taskDir, ref, admin!, await common);
  if (fresh) {
    restorePointers(t);
    // The tree is lazy's own until a container sees it: git may run in it this once.
    await gitAsync(root, ["--git-dir", t.adminDir, "--work-tree", worktree, "reset", "--hard", "--quiet"]);
    await copyIncluded(root, worktree);
  }
  for (const d of [t.privateRefs, t.privateLogs, t.privateObjects]) {
    if (!existsSync(d)) {
      mkdirSync(d, { mode: 0o700 });
      if (owner !== undefined) chownSync(d, owner, owner);
    }
  }
  // Mount points in the project for the stand-ins (empty folders; what is mounted there is lazy's).
  for (const d of [join(t.commonDir, "refs/heads/lazy"), join(t.commonDir, "logs/refs/heads/lazy")]) mkdirSync(d, { recursive: true });
  AgentDir.mkdir(t.privateObjects, "info", { uid: owner });
  AgentDir.write(t.privateObjects, "info/alternates", "/lazy/repo-objects\n", { mode: 0o644, uid: owner });
  // The agent's branch as the container sees it: set once; afterwards only the agent moves it.
  // It follows the real branch when that moved ahead on the host (lazy pair) since the last turn.
  const real = (await gitAsync(root, ["rev-parse", `refs/heads/${branch}`])).out.trim();
  const seen = readRef(t, ref);
  if (!seen || (seen !== real && (await gitAsync(root, ["merge-base", "--is-ancestor", seen, real], { allowFail: true })).code === 0))
    AgentDir.write(t.privateRefs, ref, `${real}\n`, { mode: 0o644, uid: owner });
  if (fresh && owner !== undefined) for (const d of [worktree, t.adminDir]) chownTree(d, owner);
  restorePointers(t, owner);
  // What the container sees of the git folder, afresh each turn (refs packed meanwhile, a new shallow).
  await writeView(t.commonDir, t.view);
  return t;
}

/** The commit the agent's private ref names, if it is a plain file holding one; else null. */
function readRef(t: TaskGit, ref: string): string | null {
  let text: string | null;
  try {
    text = AgentDir.readText(t.privateRefs, ref, 256);
  } catch (e) {
    if (e instanceof AgentDir.LinkRefused) return null; // a link there: replaced on the next write
    throw e;
  }
  const want = text?.trim() ?? "";
  return /^[0-9a-f]{40}([0-9a-f]{24})?$/.test(want) ? want : null;
}

/**
 * Put back what ties the worktree to the repository, from lazy's records: the worktree's .git
 * file and its admin folder's gitdir and commondir, and no per-worktree config. The agent may
 * have rewritten any of them; host-side git (lazy pair's harness, the user in that folder,
 * git worktree remove) must find the project's own repository through them, nothing else.
 */
export function restorePointers(t: TaskGit, uid?: number): void {
  const dotGit = AgentDir.lstat(t.worktree, ".git");
  if (dotGit && !dotGit.isFile()) AgentDir.rename(t.worktree, ".git", `.git.agent-${Date.now()}`);
  AgentDir.write(t.worktree, ".git", `gitdir: ${t.adminDir}\n`, { mode: 0o644, uid });
  AgentDir.write(t.adminDir, "gitdir", `${join(t.worktree, ".git")}\n`, { mode: 0o644, uid });
  AgentDir.write(t.adminDir, "commondir", `${t.commonDir}\n`, { mode: 0o644, uid });
  AgentDir.unlink(t.adminDir, "config.worktree");
}

/**
 * Bring the agent's commits into the repository: import its new objects (each loose object is
 * checked against its name; packs through git index-pack), then move the task's branch to
 * the commit its private ref names, if that is a commit.
 */
export function syncBranch(root: string, t: TaskGit, ref: string): { moved: boolean; from: string; tip: string; skipped: string[] } {
  const skipped = importObjects(t.privateObjects, join(t.commonDir, "objects"), root);
  const current = git(root, ["rev-parse", `refs/heads/${t.branch}`]).out.trim();
  const want = readRef(t, ref);
  const stay = { moved: false, from: current, tip: current, skipped };
  if (!want || want === current) return stay;
  if (git(root, ["cat-file", "-t", want], { allowFail: true }).out.trim() !== "commit") return stay;
  // Forward only: the branch may have moved on the host meanwhile (lazy pair), and an agent
  // that rewrote its history does not get to rewind what is already on the branch.
  if (git(root, ["merge-base", "--is-ancestor", current, want], { allowFail: true }).code !== 0) return stay;
  git(root, ["update-ref", "-m", "lazy: the task's turn", `refs/heads/${t.branch}`, want, current]);
  return { moved: true, from: current, tip: want, skipped };
}

/** Bounds on what one turn's import reads: a loose object, a pack, and all of it. */
const MAX_LOOSE = 64 * 1024 * 1024;
const MAX_PACK = 2 * 1024 * 1024 * 1024;

/**
 * Copy the agent's new objects into the repository. Read through AgentDir (no link followed,
 * regular files only, bounded); what is refused is named in the result, never fatal.
 */
function importObjects(from: string, to: string, root: string): string[] {
  const skipped: string[] = [];
  const format = git(root, ["rev-parse", "--show-object-format"], { allowFail: true }).out.trim() || "sha1";
  const guard = <T>(what: string, fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof AgentDir.LinkRefused)) throw e;
      skipped.push(`${what}: ${e.message}`);
      return undefined;
    }
  };
  for (const dir of AgentDir.list(from, "")) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const name of guard(dir, () => AgentDir.list(from, dir)) ?? []) {
      if (!/^[0-9a-f]{38}([0-9a-f]{24})?$/.test(name)) continue;
      const dest = join(to, dir, name);
      if (existsSync(dest)) continue;
      const got = guard(`${dir}/${name}`, () => AgentDir.read(from, `${dir}/${name}`, { max: MAX_LOOSE }));
      if (!got) continue;
      if (got.size > MAX_LOOSE) {
        skipped.push(`${dir}/${name}: over ${MAX_LOOSE} bytes`);
        continue;
      }
      let ok = false;
      try {
        ok =
          createHash(format === "sha256" ? "sha256" : "sha1")
            .update(inflateSync(got.data, { maxOutputLength: 4 * MAX_LOOSE }))
            .digest("hex") ===
          dir + name;
      } catch {}
      if (!ok) continue; // not the object its name claims: never let it into the repository
      mkdirSync(join(to, dir), { recursive: true });
      const tmp = `${dest}.lazy-${process.pid}`;
      writeFileSync(tmp, got.data, { flag: "wx", mode: 0o444 });
      renameSync(tmp, dest);
    }
  }
  for (const p of guard("pack", () => AgentDir.list(from, "pack")) ?? []) {
    if (!/^pack-[0-9a-f]+\.pack$/.test(p)) continue;
    const f = guard(`pack/${p}`, () => AgentDir.openFile(from, `pack/${p}`));
    if (!f) continue;
    try {
      if (f.size > MAX_PACK) {
        skipped.push(`pack/${p}: over ${MAX_PACK} bytes`);
        continue;
      }
      // index-pack checks every object in the pack as it writes it into the real repository.
      const r = Bun.spawnSync(["git", ...HARDENED, "index-pack", "--stdin", "--fix-thin"], {
        cwd: root,
        env: gitEnv(),
        stdin: Bun.file(f.fd),
        stdout: "ignore",
        stderr: "pipe",
      });
      if (r.exitCode !== 0) skipped.push(`pack/${p}: git index-pack refused it (${r.stderr.toString().trim().split("\n").at(-1)})`);
    } finally {
      closeSync(f.fd);
    }
  }
  return skipped;
}

/**
 * Remove the task's worktree and its admin folder. Only once its container is gone (the
 * caller's rule): with no agent left to race it, nothing there changes under the removal, and
 * rm never follows a link. A worktree from before lazy kept its admin folder is git's to remove.
 */
export function removeWorktree(root: string, t: TaskGit, taskDir: string): void {
  if (t.adminDir === adminDirOf(taskDir)) {
    rmSync(t.worktree, { recursive: true, force: true });
    rmSync(t.adminDir, { recursive: true, force: true });
    return;
  }
  if (existsSync(t.worktree)) {
    restorePointers(t);
    git(root, ["worktree", "remove", "--force", "--force", t.worktree], { allowFail: true });
  }
  git(root, ["worktree", "prune"], { allowFail: true });
}

export function deleteBranch(root: string, branch: string): void {
  git(root, ["branch", "-D", branch], { allowFail: true });
}

/**
 * Git-ignored files the project lists in .worktreeinclude (one pattern a line, such as .env)
 * are copied into a new worktree: they are what a fresh checkout lacks to build and run.
 */
async function copyIncluded(root: string, worktree: string): Promise<void> {
  for (const f of await included(root)) {
    const dest = join(worktree, f);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(join(root, f), dest);
  }
}

/**
 * The git-ignored files of the checkout that .worktreeinclude names (paths from the root): the
 * only ones of the person's working files a task (its worktree, its check) ever gets.
 */
export async function included(root: string): Promise<string[]> {
  const list = join(root, ".worktreeinclude");
  if (!existsSync(list)) return [];
  // It comes with the checkout: a pull can make it a link to a FIFO or /dev/zero (util/bounded-read.ts).
  const read = readRegular(list, 64 * 1024);
  if (!("text" in read))
    throw new LazyError("launch_refused", `${list} ${read.why}, so lazy copies nothing by it: make it a plain file of patterns.`);
  const patterns = read.text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  if (!patterns.length) return [];
  const ignored = (await gitAsync(root, ["ls-files", "--others", "--ignored", "--exclude-standard", "-z"])).out.split("\0").filter(Boolean);
  const globs = patterns.map((p) => new Bun.Glob(p.replace(/^\//, "")));
  return ignored.filter((f) => globs.some((g) => g.match(f) || g.match(f.split("/").at(-1)!)));
}

/** Only on a tree lazy has just made, before any container saw it; links are not followed. */
function chownTree(path: string, uid: number): void {
  const st = lstatSync(path, { throwIfNoEntry: false });
  if (!st || st.isSymbolicLink()) return;
  lchownSync(path, uid, uid);
  if (st.isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e), uid);
}
