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
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync, chownSync, lstatSync } from "node:fs";
import { createHash } from "node:crypto";
import { inflateSync } from "node:zlib";
import { join, dirname } from "node:path";
import { LazyError } from "../util/errors";

export const BRANCH_PREFIX = "lazy/";

export function git(cwd: string, args: string[], opts: { allowFail?: boolean } = {}): { code: number; out: string; err: string } {
  // The agent's files are owned by its uid, not lazy's: trust the folders lazy made.
  const r = Bun.spawnSync(["git", "-c", "safe.directory=*", ...args], { cwd, stdout: "pipe", stderr: "pipe", env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" } });
  const res = { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  if (res.code !== 0 && !opts.allowFail) throw new LazyError("launch_refused", `git ${args[0]} failed in ${cwd}: ${res.err.trim().split("\n").at(-1) ?? `exit ${res.code}`}`);
  return res;
}

export function isRepo(root: string): boolean {
  return git(root, ["rev-parse", "--git-dir"], { allowFail: true }).code === 0;
}

export function commonDir(root: string): string {
  return join(root, git(root, ["rev-parse", "--git-common-dir"]).out.trim()).replace(/\/\.$/, "");
}

export function head(root: string): { branch: string | null; commit: string } {
  const commit = git(root, ["rev-parse", "--verify", "HEAD"], { allowFail: true });
  if (commit.code !== 0) throw new LazyError("launch_refused", `The project at ${root} has no commit yet; a task's worktree starts from HEAD, so commit something first.`);
  const b = git(root, ["symbolic-ref", "--quiet", "--short", "HEAD"], { allowFail: true });
  return { branch: b.code === 0 ? b.out.trim() : null, commit: commit.out.trim() };
}

export interface TaskGit {
  branch: string;
  worktree: string;
  /** <common>/worktrees/<name>: the worktree's own HEAD, index and logs. */
  adminDir: string;
  commonDir: string;
  /** Private stand-ins mounted over the repository's own in the container. */
  privateRefs: string;
  privateLogs: string;
  privateObjects: string;
}

export function layout(root: string, worktree: string, taskDir: string, ref: string): Omit<TaskGit, "adminDir"> {
  const common = commonDir(root);
  return {
    branch: `${BRANCH_PREFIX}${ref}`,
    worktree,
    commonDir: common,
    privateRefs: join(taskDir, "git", "refs"),
    privateLogs: join(taskDir, "git", "logs"),
    privateObjects: join(taskDir, "git", "objects"),
  };
}

/** Create (or find again) the task's worktree and the private folders that stand in for the repo's. */
export function ensureWorktree(root: string, worktree: string, taskDir: string, ref: string, agentUid: number | null): TaskGit {
  const l = layout(root, worktree, taskDir, ref);
  if (!existsSync(join(worktree, ".git"))) {
    const { commit } = head(root);
    mkdirSync(dirname(worktree), { recursive: true, mode: 0o700 });
    const exists = git(root, ["rev-parse", "--verify", "--quiet", `refs/heads/${l.branch}`], { allowFail: true }).code === 0;
    git(root, ["worktree", "add", ...(exists ? [] : ["-b", l.branch]), worktree, exists ? l.branch : commit]);
    copyIncluded(root, worktree);
  }
  const adminDir = git(worktree, ["rev-parse", "--absolute-git-dir"]).out.trim();
  for (const d of [l.privateRefs, l.privateLogs, join(l.privateObjects, "info"), join(l.commonDir, "refs/heads/lazy"), join(l.commonDir, "logs/refs/heads/lazy")]) mkdirSync(d, { recursive: true });
  // The agent's branch as the container sees it: set once; afterwards only the agent moves it.
  // It follows the real branch when that moved ahead on the host (lazy pair) since the last turn.
  const privateRef = join(l.privateRefs, ref);
  const real = git(root, ["rev-parse", `refs/heads/${l.branch}`]).out.trim();
  const seen = existsSync(privateRef) ? readFileSync(privateRef, "utf8").trim() : "";
  if (!seen || (seen !== real && git(root, ["merge-base", "--is-ancestor", seen, real], { allowFail: true }).code === 0)) writeFileSync(privateRef, `${real}\n`);
  writeFileSync(join(l.privateObjects, "info", "alternates"), "/lazy/repo-objects\n");
  if (agentUid !== null) for (const d of [worktree, adminDir, join(taskDir, "git")]) chownTree(d, agentUid);
  return { ...l, adminDir };
}

/** The task's git layout as it stands, touching nothing. */
export function existing(root: string, worktree: string, taskDir: string, ref: string): TaskGit {
  const l = layout(root, worktree, taskDir, ref);
  return { ...l, adminDir: git(worktree, ["rev-parse", "--absolute-git-dir"]).out.trim() };
}

/**
 * Bring the agent's commits into the repository: import its new objects (each loose object is
 * checked against its name; packs through git index-pack), then move the task's branch to
 * the commit its private ref names, if that is a commit.
 */
export function syncBranch(root: string, t: TaskGit, ref: string): { moved: boolean; tip: string } {
  importObjects(t.privateObjects, join(t.commonDir, "objects"), root);
  const file = join(t.privateRefs, ref);
  const current = git(root, ["rev-parse", `refs/heads/${t.branch}`]).out.trim();
  if (!existsSync(file)) return { moved: false, tip: current };
  const want = readFileSync(file, "utf8").trim();
  if (!/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(want) || want === current) return { moved: false, tip: current };
  if (git(root, ["cat-file", "-t", want], { allowFail: true }).out.trim() !== "commit") return { moved: false, tip: current };
  // Forward only: the branch may have moved on the host meanwhile (lazy pair), and an agent
  // that rewrote its history does not get to rewind what is already on the branch.
  if (git(root, ["merge-base", "--is-ancestor", current, want], { allowFail: true }).code !== 0) return { moved: false, tip: current };
  git(root, ["update-ref", "-m", "lazy: the task's turn", `refs/heads/${t.branch}`, want, current]);
  return { moved: true, tip: want };
}

function importObjects(from: string, to: string, root: string): void {
  if (!existsSync(from)) return;
  const format = git(root, ["rev-parse", "--show-object-format"], { allowFail: true }).out.trim() || "sha1";
  for (const dir of readdirSync(from)) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue;
    for (const name of readdirSync(join(from, dir))) {
      const dest = join(to, dir, name);
      if (existsSync(dest)) continue;
      const src = join(from, dir, name);
      if (!lstatSync(src).isFile()) continue;
      const data = readFileSync(src);
      let ok = false;
      try {
        ok = createHash(format === "sha256" ? "sha256" : "sha1").update(inflateSync(data)).digest("hex") === dir + name;
      } catch {}
      if (!ok) continue; // not the object its name claims: never let it into the repository
      mkdirSync(join(to, dir), { recursive: true });
      const tmp = `${dest}.lazy-${process.pid}`;
      copyFileSync(src, tmp);
      renameSync(tmp, dest);
    }
  }
  const packs = join(from, "pack");
  if (existsSync(packs))
    for (const p of readdirSync(packs).filter((f) => f.endsWith(".pack")))
      // index-pack checks every object in the pack as it writes it into the real repository.
      Bun.spawnSync(["git", "-c", "safe.directory=*", "index-pack", "--stdin", "--fix-thin"], { cwd: root, stdin: Bun.file(join(packs, p)), stdout: "ignore", stderr: "ignore" });
}

/** The task's commits not yet on the project's branch, one line each. */
export function commitsToMerge(root: string, branch: string): string[] {
  const r = git(root, ["log", "--format=%h %s", `HEAD..refs/heads/${branch}`]);
  return r.out.trim() ? r.out.trim().split("\n") : [];
}

/** Merge the task's branch into the project's current branch (never a fast-forward that hides it). */
export function merge(root: string, branch: string, message: string): void {
  const r = git(root, ["merge", "--no-ff", "-m", message, `refs/heads/${branch}`], { allowFail: true });
  if (r.code !== 0) {
    git(root, ["merge", "--abort"], { allowFail: true });
    throw new LazyError("conflict", `Merging ${branch} into the project failed (${(r.err || r.out).trim().split("\n").at(-1)}); nothing was changed. Merge it by hand: git merge ${branch}.`);
  }
}

export function removeWorktree(root: string, worktree: string): void {
  if (existsSync(worktree)) git(root, ["worktree", "remove", "--force", worktree], { allowFail: true });
  git(root, ["worktree", "prune"], { allowFail: true });
}

export function deleteBranch(root: string, branch: string): void {
  git(root, ["branch", "-D", branch], { allowFail: true });
}

/**
 * Git-ignored files the project lists in .worktreeinclude (one pattern a line, such as .env)
 * are copied into a new worktree: they are what a fresh checkout lacks to build and run.
 */
function copyIncluded(root: string, worktree: string): void {
  const list = join(root, ".worktreeinclude");
  if (!existsSync(list)) return;
  const patterns = readFileSync(list, "utf8").split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  if (!patterns.length) return;
  const ignored = git(root, ["ls-files", "--others", "--ignored", "--exclude-standard", "-z"]).out.split("\0").filter(Boolean);
  const globs = patterns.map((p) => new Bun.Glob(p.replace(/^\//, "")));
  for (const f of ignored) {
    if (!globs.some((g) => g.match(f) || g.match(f.split("/").at(-1)!))) continue;
    const dest = join(worktree, f);
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(join(root, f), dest);
  }
}

function chownTree(path: string, uid: number): void {
  if (!existsSync(path)) return;
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return;
  chownSync(path, uid, uid);
  if (st.isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e), uid);
}
