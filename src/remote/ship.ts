/**
 * A task on a remote Docker engine (DOCKER_HOST=tcp://…): nothing of this host is mounted
 * there, so what a task's container is made of travels, at the same paths a local container
 * would see them mounted. In, once when the container is made: the task's worktree and git
 * admin folder, the repository's git data (its objects at /lazy/repo-objects, the rest of
 * .git) and the agent's private ref and objects folder; lazy's Linux binary goes once per
 * build into a volume on the engine, mounted read-only (binaryVolume); in, each turn:
 * the harness's files. Out, while a turn runs: its folder (events.jsonl, exit.json) mirrored
 * into the host's turn folder, which turn-watch.ts reads as it reads a local one. Out, after
 * the turn: the agent's objects and ref into the task's private folders on the host, which
 * Git.syncBranch then imports with the same checks as ever (each loose object against its
 * hash, packs through index-pack, the branch forward only). What comes out is read by
 * containers/tar.ts with bounds, regular files only, under names lazy expects.
 *
 * lazy's own calls (own-calls/) on a remote engine get the same: lazy's folders, the binary's
 * volume, the harness's files and the turn folder mirrored back; and, for the project they may
 * read, its committed tree at HEAD (git archive) in a volume of its own, mounted read-only and
 * removed with the call (treeVolume): nothing uncommitted, untracked or ignored (.env) travels.
 */

import { createHash } from "node:crypto";
import {
  constants as C,
  closeSync,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import * as AgentDir from "../agent-dir";
import { BIN, type Runtime, Tar } from "../containers";
import * as Git from "../git";
import { FILES } from "../supervisor";
import { LazyError } from "../util/errors";

/** Where the repository's objects are in the container (the private objects' alternates). */
const REPO_OBJECTS = "/lazy/repo-objects";
/** A turn's folder, read back each time: events past the turn's bound are not read anyway. */
const MAX_TURN = 80 * 1024 * 1024;
/** The agent's objects brought back after one turn, and one loose object (as git/index.ts). */
export const MAX_OBJECTS = 512 * 1024 * 1024;
const MAX_LOOSE = 64 * 1024 * 1024;
const LOOSE = /^objects\/([0-9a-f]{2})\/([0-9a-f]{38}|[0-9a-f]{62})$/;
const PACK = /^objects\/pack\/(pack-[0-9a-f]{40,64}\.(pack))$/;
const TURN_FILE = /^\d+\/([a-z][a-z.]{0,30})$/;

/** A regular file's bytes, opened without following a link; null for anything else. */
function readPlain(path: string): Uint8Array | null {
  let fd: number;
  try {
    fd = openSync(path, C.O_RDONLY | C.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    return fstatSync(fd).isFile() ? readFileSync(fd) : null;
  } finally {
    closeSync(fd);
  }
}

/**
 * A folder tree as tar entries at `as`, links kept as links (never followed here), regular
 * files and folders with their modes, owned by `uid`; `skip` names relative paths left out.
 */
function tree(dir: string, as: string, uid: number, skip: (rel: string) => boolean = () => false, fileMode?: number): Tar.Entry[] {
  const out: Tar.Entry[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const rel = relative(dir, p);
      if (skip(rel)) continue;
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      const at = join(as, rel);
      if (st.isSymbolicLink()) out.push({ name: at, type: "link", mode: 0o777, uid, target: readlinkSync(p) });
      else if (st.isDirectory()) {
        out.push({ name: at, type: "dir", mode: st.mode & 0o777, uid });
        walk(p);
      } else if (st.isFile())
        // Read when the archive is written (a file already on the engine is never read); one
        // that is no longer a plain file by then goes empty.
        out.push({ name: at, type: "file", mode: fileMode ?? st.mode & 0o777, uid, data: () => readPlain(p) ?? new Uint8Array() });
    }
  };
  walk(dir);
  return out;
}

export interface Shipment {
  g: Git.TaskGit;
  ref: string;
  uid: number;
}

/** The binary's hash, once per file version (hashing 120 MB each launch would cost ~0.3 s). */
const hashes = new Map<string, string>();
function binaryHash(path: string): string {
  const st = statSync(path);
  const key = `${path} ${st.size} ${st.mtimeMs}`;
  let h = hashes.get(key);
  if (!h) {
    h = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
    hashes.set(key, h);
  }
  return h;
}

/**
 * lazy's Linux binary on the engine: a volume holding a copy (sent once per build, not per
 * task), which task containers mount read-only at /lazy/bin. A volume of the engine's own,
 * never a mount of this host. Its name, for the container's spec.
 */
export async function binaryVolume(docker: Runtime, binary: string, image: string): Promise<{ name: string; container: string }> {
  const name = `lazy-bin-${binaryHash(binary)}`;
  await docker.files.ensureVolume(name, "lazy-bin", image, () =>
    Tar.write([{ name: basename(BIN), type: "file", mode: 0o755, uid: 0, data: () => readFileSync(binary) }]),
  );
  return { name, container: dirname(BIN) };
}

const dir = (name: string, owner: number, mode = 0o755): Tar.Entry => ({ name, type: "dir", mode, uid: owner });

/** lazy's folders in a container, the agent's to write (a task's and a call's alike). */
const lazyDirs = (uid: number): Tar.Entry[] => [
  dir("/lazy", 0),
  dir("/lazy/home", uid, 0o700),
  dir("/lazy/harness", uid, 0o700),
  dir("/lazy/turns", uid, 0o700),
];

/** What a new container on a remote engine gets before it starts (see the top of this file). */
export function shipment(s: Shipment): Tar.Entry[] {
  const { g, uid } = s;
  const common = g.commonDir;
  // The git folder as a local container sees it (git/view.ts): lazy's view of it (config,
  // HEAD, packed-refs, shallow, info/exclude; never the person's config, the main checkout's
  // index, hooks, other worktrees, LFS or annex contents) and the repository's refs, lazy's
  // task branches aside.
  const ref = AgentDir.readText(g.privateRefs, s.ref, 256) ?? "";
  return [
    ...lazyDirs(uid),
    // The repository's own git data: readable, the agent's only through its private stand-ins.
    dir(common, 0),
    ...tree(g.view, common, 0, (rel) => /^(objects|refs|logs)$/.test(rel), 0o644),
    dir(join(common, "refs"), 0),
    ...tree(join(common, "refs"), join(common, "refs"), 0, (rel) => rel === "heads/lazy" || rel.startsWith("heads/lazy/")),
    dir(join(common, "objects"), uid),
    dir(join(common, "objects/info"), uid),
    { name: join(common, "objects/info/alternates"), type: "file", mode: 0o644, uid, data: Buffer.from(`${REPO_OBJECTS}\n`) },
    dir(join(common, "refs/heads/lazy"), uid),
    { name: join(common, "refs/heads/lazy", s.ref), type: "file", mode: 0o644, uid, data: Buffer.from(ref) },
    dir(join(common, "logs"), 0),
    dir(join(common, "logs/refs"), 0),
    dir(join(common, "logs/refs/heads"), 0),
    dir(join(common, "logs/refs/heads/lazy"), uid),
    // The agent's own: its worktree and the worktree's admin folder.
    dir(g.adminDir, uid),
    ...tree(g.adminDir, g.adminDir, uid),
    dir(g.worktree, uid),
    ...tree(g.worktree, g.worktree, uid),
  ];
}

/** Object files (loose objects, packs and their indexes) are named by their content: one sent is never sent again. */
const OBJECT_FILE = /^([0-9a-f]{2}\/[0-9a-f]{38}([0-9a-f]{24})?|pack\/pack-[0-9a-f]{40,64}\.(pack|idx|rev))$/;

/**
 * The repository's objects on the engine: a volume per project (`lazy-objects-<slug>`), mounted
 * read-only at /lazy/repo-objects in its task containers, topped up before each new container
 * with the object files it lacks (a record per engine in the state folder says which were sent;
 * a volume that is gone starts the record over). A 100 MB repository travels once, not per task.
 */
export async function objectsVolume(
  docker: Runtime,
  g: Git.TaskGit,
  slug: string,
  stateDir: string,
  image: string,
): Promise<{ name: string; container: string; sent: number; bytes: number }> {
  const name = `lazy-objects-${slug}`;
  const record = join(stateDir, `remote-objects-${createHash("sha256").update(docker.endpoint.host).digest("hex").slice(0, 12)}.txt`);
  let sent = new Set<string>();
  if (await docker.files.volumeExists(name))
    try {
      sent = new Set(readFileSync(record, "utf8").split("\n").filter(Boolean));
    } catch {}
  const objects = join(g.commonDir, "objects");
  const missing: Tar.Entry[] = [];
  const found: string[] = [];
  let bytes = 0;
  for (const e of tree(objects, "/v", 0, (rel) => rel === "info" || rel.startsWith("info/"), 0o444)) {
    const rel = relative("/v", e.name);
    if (e.type === "dir" || !OBJECT_FILE.test(rel)) continue;
    found.push(rel);
    if (!sent.has(rel)) {
      missing.push(e);
      bytes += lstatSync(join(objects, rel)).size;
    }
  }
  if (missing.length || !sent.size) {
    const dirs = new Set(missing.map((e) => dirname(e.name)));
    await docker.files.fillVolume(name, "objects", image, () =>
      Tar.write([...[...dirs].sort().map((d): Tar.Entry => ({ name: d, type: "dir", mode: 0o755, uid: 0 })), ...missing]),
    );
    writeFileSync(record, `${[...new Set([...sent, ...found])].join("\n")}\n`, { mode: 0o600 });
  }
  return { name, container: REPO_OBJECTS, sent: missing.length, bytes };
}

/** Ship everything a new container needs into it (created, not yet started). */
export async function ship(docker: Runtime, id: string, s: Shipment): Promise<void> {
  await docker.files.putArchive(id, "/", Tar.write(shipment(s)));
}

/** lazy's folders into a call's new container (created, not yet started): it has no worktree. */
export async function shipCall(docker: Runtime, id: string, uid: number): Promise<void> {
  await docker.files.putArchive(id, "/", Tar.write(lazyDirs(uid)));
}

/** A project's committed tree over this is not sent for a call (a remote engine gets it per call). */
export const MAX_TREE = 512 * 1024 * 1024;

/**
 * The project's committed tree at HEAD (git archive: links stay links, nothing of the
 * checkout's untracked, ignored or uncommitted files) in a new volume `name` on the engine,
 * for one call to mount read-only where the project is; removed with the call.
 */
export async function treeVolume(docker: Runtime, root: string, name: string, image: string): Promise<void> {
  // Unpacked at / of a container that mounts the volume at /v (EngineFiles.fillVolume).
  const tar = await Git.gitBytes(root, ["archive", "--format=tar", "--prefix=v/", "HEAD"], MAX_TREE);
  if (tar === "over")
    throw new LazyError(
      "launch_refused",
      docker.remote
        ? `The project's tree at HEAD is over ${MAX_TREE / 1048576} MiB: lazy does not send it to the Docker engine at ${docker.endpoint.host} for one of its own calls; unset DOCKER_HOST to make the call on this machine's engine.`
        : `The project's tree at HEAD is over ${MAX_TREE / 1048576} MiB: lazy's own calls read the committed tree, copied for each call, and lazy copies no more than that.`,
    );
  if (!tar)
    throw new LazyError(
      "launch_refused",
      `git archive HEAD failed in ${root}: lazy's own calls read the project's committed tree (a repository with no commit has none); commit first.`,
    );
  await docker.files.fillVolume(name, "call-tree", image, () => [tar]);
}

/** The harness's files for this turn (what prepareTurn wrote on the host), into /lazy/harness. */
export async function shipHarness(docker: Runtime, id: string, files: Record<string, string>, uid: number): Promise<void> {
  const entries: Tar.Entry[] = [];
  const dirs = new Set<string>();
  for (const [rel, content] of Object.entries(files)) {
    const parts = rel.split("/");
    for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
    entries.push({ name: join("/lazy/harness", rel), type: "file", mode: 0o600, uid, data: Buffer.from(content) });
  }
  const dirEntries: Tar.Entry[] = [...dirs].sort().map((d) => ({ name: join("/lazy/harness", d), type: "dir", mode: 0o700, uid }));
  await docker.files.putArchive(id, "/", Tar.write([...dirEntries, ...entries]));
}

/**
 * Mirror the turn's folder from the container into the host's turn folder (lazy's own on a
 * remote engine): regular files under the supervisor's names only, bounded.
 */
export async function pullTurn(docker: Runtime, id: string, turn: number, hostTurns: string, uid?: number): Promise<void> {
  const tar = await docker.files.getArchive(id, `/lazy/turns/${turn}`, MAX_TURN);
  if (!tar) return;
  const files = Tar.read(tar, (name) => TURN_FILE.test(name), MAX_TURN);
  // exit.json last: whoever sees it on the host reads the events that came with it.
  files.sort((a, b) => Number(a.name.endsWith(`/${FILES.exit}`)) - Number(b.name.endsWith(`/${FILES.exit}`)));
  for (const e of files) {
    const m = TURN_FILE.exec(e.name);
    if (!m || e.type !== "file" || !e.data || !e.name.startsWith(`${turn}/`)) continue;
    AgentDir.write(hostTurns, `${turn}/${m[1]}`, e.data, { mode: 0o644, uid });
  }
}

/**
 * Mirror a turn's folder into `hostTurns` every 500 ms while `going()` says so (a task's turn
 * this daemon follows, a call in flight); a read that fails is said and tried again.
 */
export async function mirrorTurn(
  docker: Runtime,
  id: string,
  turn: number,
  hostTurns: string,
  opts: { going: () => boolean; warn: (why: string) => void; uid?: number },
): Promise<void> {
  let last = "";
  for (let poll = 0; opts.going(); poll++) {
    try {
      // The folder is read again only when it changed: the two logs grow, started.json and
      // exit.json appear (each stat'ed itself: a folder's time can miss a rename in the same
      // clock tick as the file's making), and every 10th poll whatever the stats say. While a
      // tool runs for minutes, five stats a poll go, where a whole folder (up to MAX_TURN) did.
      const dir = `/lazy/turns/${turn}`;
      const stats = await Promise.all(
        [dir, ...[FILES.events, FILES.stderr, FILES.started, FILES.exit].map((f) => `${dir}/${f}`)].map((p) => docker.files.stat(id, p)),
      );
      const now = JSON.stringify(stats);
      if (now !== last || poll % 10 === 0) {
        await pullTurn(docker, id, turn, hostTurns, opts.uid);
        last = now;
      }
    } catch (e) {
      opts.warn(`reading its turn from ${docker.endpoint.host}: ${(e as Error).message}`);
    }
    await Bun.sleep(500);
  }
}

/**
 * After a turn: the agent's new objects and its ref, from the (stopped) container into the
 * task's private folders on the host, where Git.syncBranch checks and imports them. Returns
 * what was not brought back, and why.
 */
export async function bringBack(docker: Runtime, id: string, g: Git.TaskGit, ref: string, harness: string): Promise<string[]> {
  const skipped: string[] = [];
  let tar: Uint8Array | undefined;
  try {
    tar = await docker.files.getArchive(id, join(g.commonDir, "objects"), MAX_OBJECTS);
  } catch (e) {
    return [`the agent's objects: ${(e as Error).message}`];
  }
  const keep = (name: string, size: number) => (LOOSE.test(name) && size <= MAX_LOOSE) || (PACK.test(name) && size <= MAX_OBJECTS);
  let entries: Tar.ReadEntry[] = [];
  try {
    entries = tar ? Tar.read(tar, keep, MAX_OBJECTS) : [];
  } catch (e) {
    return [`the agent's objects: ${(e as Error).message}`];
  }
  for (const e of entries) {
    const loose = LOOSE.exec(e.name);
    const pack = PACK.exec(e.name);
    if (!loose && !pack) continue;
    if (e.type !== "file") {
      skipped.push(`${e.name}: not a regular file`);
      continue;
    }
    if (!e.data) {
      skipped.push(`${e.name}: over ${loose ? MAX_LOOSE : MAX_OBJECTS} bytes`);
      continue;
    }
    const rel = loose ? `${loose[1]}/${loose[2]}` : `pack/${pack![1]}`;
    if (AgentDir.lstat(g.privateObjects, rel)) continue;
    AgentDir.write(g.privateObjects, rel, e.data, { mode: 0o444 });
  }
  await pullTranscripts(docker, id, harness).catch((e: unknown) => skipped.push(`the harness's transcripts: ${(e as Error).message}`));
  const refTar = await docker.files.getArchive(id, join(g.commonDir, "refs/heads/lazy", ref), 64 * 1024).catch(() => undefined);
  const refEntry = refTar
    ? Tar.read(refTar, (name, size) => name === ref && size <= 256, 64 * 1024).find((e) => e.name === ref)
    : undefined;
  if (refEntry?.type === "file" && refEntry.data) AgentDir.write(g.privateRefs, ref, refEntry.data, { mode: 0o644 });
  else if (refEntry) skipped.push(`refs/heads/lazy/${ref}: not a regular file of a commit name`);
  return skipped;
}

/** Claude Code's session transcripts (a next turn resumes the session; lazy pair copies them). */
const TRANSCRIPT = /^harness\/(projects\/[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}\/[A-Za-z0-9_-]{1,128}\.jsonl)$/;
const MAX_TRANSCRIPTS = 64 * 1024 * 1024;

/** The harness's transcripts, into the host's harness folder (lazy's own for a remote task). */
async function pullTranscripts(docker: Runtime, id: string, harness: string): Promise<void> {
  const tar = await docker.files.getArchive(id, "/lazy/harness", MAX_TRANSCRIPTS);
  if (!tar) return;
  for (const e of Tar.read(tar, (name) => TRANSCRIPT.test(name), MAX_TRANSCRIPTS)) {
    const m = TRANSCRIPT.exec(e.name);
    if (m && e.type === "file" && e.data) AgentDir.write(harness, m[1]!, e.data);
  }
}

/**
 * Whether a throwaway container on the remote engine (the task image, the project's network,
 * lazy's binary from its volume, so any image will do) gets an HTTP answer from the proxy at
 * `url` (lazy's own MCP route: it answers 401 itself, nothing goes upstream). What went wrong,
 * or undefined when it answered.
 */
export async function probe(
  docker: Runtime,
  image: string,
  network: string,
  bin: { name: string; container: string },
  url: string,
): Promise<string | undefined> {
  const r = await docker.files.runOnce(image, network, [BIN, "supervise", "--probe", url], 20_000, [bin]);
  if (r.code === 0) return undefined;
  return `a container there got no answer: ${r.output.trim().slice(0, 200) || `exit ${r.code}`}`;
}
