/**
 * Trust for a repository's lazy.toml (direnv's `allow` is the model). The file lives in the
 * checkout, so an agent's commit, a pull or a checkout can change it; the keys that decide where
 * a credential goes, what runs at build or on the host, or what a container reaches take effect
 * only for content the person approved with `lazy trust`. The record is kept in the lazy home
 * (`trusted.json`, 0600 in a 0700 folder), outside any repository, keyed by the file's absolute
 * path.
 *
 * Which keys need trust is decided by the opposite list: a few keys that cannot move a
 * credential, run anything, open a door, spend more or erase a record (ports, the first-byte
 * timeout, the dashboard switch, desktop notifications) are inert; every other key, including
 * any added later, bears trust (budgets, usage_pause and audit bounds too: an agent raising its
 * budget or shortening the audit is an attack as well). A file that sets only inert keys (or none) needs no trust. A file that sets a
 * trust-bearing key is accepted when those keys hold exactly what was approved: an edit of a
 * port or a comment needs no new approval, any edit of a trust-bearing value does.
 */
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { parse } from "smol-toml";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, readOwn, writeFileAtomic } from "../util/files";
import { lazyHome } from "../util/paths";
import * as BuildFiles from "./build-files";
import { FILE, formatProblem, loadText, type Problem, readConfigText } from "./load";
import { locate, pathKey } from "./positions";
import type { Config } from "./schema";

export const TRUST_FILE = "trusted.json";

/** Leaf keys that need no trust; `*` is any one key. */
export const INERT = ["server.port", "server.web", "proxy.port", "proxy.first_byte_timeout_s", "notify.desktop"];

export interface TrustRecord {
  /** sha256 of the approved file's bytes. */
  sha256: string;
  /** sha256 of the approved trust-bearing keys and values (what decides). */
  bearing: string;
  /** Per trust-bearing key, a hash of its value: says which keys a later edit changed. */
  keys: { [key: string]: string };
  /**
   * The files beside lazy.toml that go into the task image or a task (build-files.ts): the
   * Dockerfile's build context, what [container] setup names, .worktreeinclude. Absent in a
   * record from before they were trust-bearing: every such file is then new.
   */
  build?: BuildFiles.BuildFiles;
  /**
   * Per trust-bearing key, its value as approved (JSON, cut at VALUE_SHOWN characters): what the
   * next `lazy trust` shows as "old → new". Absent in a record from before: "(not recorded)".
   */
  values?: { [key: string]: string };
  trustedAt: string;
}

/** How much of a key's value a trust record keeps and `lazy trust` shows. */
const VALUE_SHOWN = 200;

/** A key's value as `lazy trust` shows it: JSON, cut. */
const shown = (v: unknown) => {
  const j = JSON.stringify(v, (_k, x) => (x instanceof Date ? x.toISOString() : x)) ?? "null";
  return j.length > VALUE_SHOWN ? `${j.slice(0, VALUE_SHOWN)}…` : j;
};

/** One trust-bearing key's change since the last approval, with its old and new values as far as known. */
export interface KeyChange {
  key: string;
  how: "added" | "changed" | "removed";
  /** The approved value (null: none, or not recorded by an older lazy). */
  was: string | null;
  now: string | null;
}

interface Book {
  version: 1;
  files: { [path: string]: TrustRecord };
}

export type Checked =
  | { ok: true; config: Config; present: boolean; file: string; record: TrustRecord | null }
  | { ok: false; untrusted: boolean; file: string; problems: Problem[]; error: LazyError };

const sha = (s: string | Uint8Array) => createHash("sha256").update(s).digest("hex");

function bookPath(home: string): string {
  return join(home, TRUST_FILE);
}

/**
 * The record, only if this user alone could have written it (like daemon.json, state.ts): a
 * trusted.json another user owns or may write would let them approve any lazy.toml.
 */
function readBook(home: string): Book {
  const p = bookPath(home);
  const read = readOwn(p);
  if (!read) return { version: 1, files: {} };
  if ("foreign" in read) throw LazyError.of("config_untrusted", { reason: "trust_record_foreign", record: p, how: read.foreign });
  const text = read.text;
  try {
    const b = JSON.parse(text) as Book;
    if (b && b.version === 1 && b.files && typeof b.files === "object") return b;
  } catch {}
  throw new LazyError("config_invalid", `${p} does not read as lazy's trust record; move it away and run lazy trust again.`);
}

const inert = (key: string) =>
  INERT.some((p) => (p.endsWith(".*") ? key.startsWith(p.slice(0, -1)) && !key.slice(p.length - 1).includes(".") : key === p));

/** Every leaf key the document sets (arrays, and tables in them, count as one value), with its value. */
function leaves(doc: unknown, path: string[] = [], out = new Map<string, unknown>()): Map<string, unknown> {
  if (doc && typeof doc === "object" && !Array.isArray(doc) && !(doc instanceof Date)) {
    for (const [k, v] of Object.entries(doc)) leaves(v, [...path, k], out);
  } else if (path.length) out.set(pathKey(path), doc);
  return out;
}

/** The pseudo-key for the contents of the Dockerfile `[container] dockerfile` names. */
export const DOCKERFILE_CONTENTS = "container.dockerfile (its contents)";
/** A Dockerfile larger than this is not lazy's to hash whole; its size stands in. */
const MAX_DOCKERFILE = 1024 * 1024;

/**
 * The trust-bearing keys of a document and a hash of each value. The Dockerfile the config
 * names is trust-bearing by its contents too: its RUN lines are what runs at build, and a pull
 * can change them without touching lazy.toml.
 */
function bearingKeys(src: string, root: string, values?: { [key: string]: string }): { [key: string]: string } {
  const keys: { [key: string]: string } = {};
  const doc = parse(src);
  for (const [k, v] of [...leaves(doc)].sort(([a], [b]) => (a < b ? -1 : 1)))
    if (!inert(k)) {
      keys[k] = sha(JSON.stringify(v, (_k, x) => (x instanceof Date ? x.toISOString() : x)));
      if (values) values[k] = shown(v);
    }
  const named = (doc.container as { dockerfile?: unknown } | undefined)?.dockerfile;
  if (typeof named === "string") keys[DOCKERFILE_CONTENTS] = dockerfileHash(resolve(root, named));
  return keys;
}

/** A hash of the file's bytes, or what stands for a file that cannot be read as one. */
function dockerfileHash(file: string): string {
  try {
    const st = lstatSync(file);
    if (!st.isFile()) return sha(`not a regular file: ${st.mode}`);
    if (st.size > MAX_DOCKERFILE) return sha(`size ${st.size} mtime ${st.mtimeMs}`);
    return sha(readFileSync(file));
  } catch {
    return sha("missing");
  }
}

const bearingHash = (keys: { [key: string]: string }) => sha(JSON.stringify(Object.entries(keys)));

/**
 * Read and check `root/lazy.toml` in one read (what is checked is what is used): it must parse,
 * pass the schema, and, when it sets a trust-bearing key, match what the person approved.
 */
export function check(root: string, home = lazyHome()): Checked {
  const file = join(root, FILE);
  if (!existsSync(file)) {
    const loaded = loadText("");
    if (!loaded.ok) throw new Error("an empty lazy.toml must load");
    return { ok: true, config: loaded.config, present: false, file, record: null };
  }
  const read = readConfigText(file);
  const src = "text" in read ? read.text : "";
  const loaded: ReturnType<typeof loadText> = "text" in read ? loadText(src) : { ok: false, problems: [read.problem] };
  if (!loaded.ok)
    return {
      ok: false,
      untrusted: false,
      file,
      problems: loaded.problems,
      error: new LazyError(
        "config_invalid",
        `${file} does not load, so the daemon will not start; fix these lines:`,
        loaded.problems.map(formatProblem),
      ),
    };
  const keys = bearingKeys(src, root);
  if (!Object.keys(keys).length) return { ok: true, config: loaded.config, present: true, file, record: null };
  const record = readBook(home).files[file];
  if (record && record.bearing === bearingHash(keys)) return { ok: true, config: loaded.config, present: true, file, record };
  const where = locate(src);
  const at = (k: string) => where.get(k === DOCKERFILE_CONTENTS ? "container.dockerfile" : k)?.key ?? { line: 1, col: 1 };
  const since = record ? ` since you trusted it (${record.trustedAt})` : "";
  const problems: Problem[] = record
    ? [
        ...Object.keys(keys)
          .filter((k) => record.keys[k] !== keys[k])
          .map((k) => ({ ...at(k), path: k, message: record.keys[k] ? `changed${since}` : `added${since}` })),
        ...Object.keys(record.keys)
          .filter((k) => !(k in keys))
          .map((k) => ({ line: 1, col: 1, path: k, message: `removed${since}` })),
      ]
    : Object.keys(keys).map((k) => ({ ...at(k), path: k, message: "set in a file you have not trusted" }));
  problems.sort((a, b) => a.line - b.line || a.col - b.col);
  const dir = root;
  return {
    ok: false,
    untrusted: true,
    file,
    problems,
    error: LazyError.of("config_untrusted", { reason: "config_not_trusted", file, dir, changed: !!record }, problems.map(formatProblem)),
  };
}

/** A change to a trust-bearing file beside lazy.toml, worded: `docker/prep.sh (changed)`. */
export interface FileChange {
  path: string;
  how: "changed" | "added" | "removed";
  /** What the file is to lazy: "in the build context of docker/Dockerfile", "named by [container] setup", … */
  what: string;
}

/** What changed in the files beside lazy.toml between a record and now (of the kinds `now` holds). */
function fileChanges(before: BuildFiles.BuildFiles | undefined, now: Partial<BuildFiles.BuildFiles>, dockerfile?: string): FileChange[] {
  const out: FileChange[] = [];
  if (now.context !== undefined) {
    const was = before?.context && before.context.dir === now.context?.dir ? before.context.files : undefined;
    const what = `in the build context of ${dockerfile ?? "the Dockerfile"}`;
    for (const c of BuildFiles.changes(was, now.context?.files ?? {})) out.push({ ...c, what });
  }
  if (now.setup !== undefined)
    for (const c of BuildFiles.changes(before?.setup, now.setup)) out.push({ ...c, what: "named by [container] setup" });
  if (now.include !== undefined && (before?.include ?? null) !== now.include)
    out.push({
      path: BuildFiles.INCLUDE_FILE,
      how: now.include === null ? "removed" : before?.include ? "changed" : "added",
      what: `which of your ignored files every task gets${now.include?.startsWith(BuildFiles.NOT_PLAIN) ? `; ${BuildFiles.INCLUDE_FILE} ${now.include.slice(BuildFiles.NOT_PLAIN.length)}` : ""}`,
    });
  return out;
}

const worded = (c: FileChange) => `${c.path} (${c.how})`;

/**
 * Approve `root/lazy.toml` and the files beside it that go into the task image or a task
 * (build-files.ts) as they are now: lazy.toml must load. Returns what changed since the last
 * approval, keys and files.
 */
export async function approve(
  root: string,
  home = lazyHome(),
  opts: {
    /** Only say what approving would change; write nothing. */
    dryRun?: boolean;
    /** The `digest` a dry run showed: refused when the files changed since (what was shown is what is approved). */
    expect?: string;
  } = {},
): Promise<{
  file: string;
  sha256: string;
  changed: string[];
  keyChanges: KeyChange[];
  files: FileChange[];
  bearing: string[];
  isNew: boolean;
  needed: boolean;
  /** What is approved: lazy.toml's bytes and the build files' record together. */
  digest: string;
}> {
  const file = join(root, FILE);
  const present = existsSync(file);
  if (!present && !existsSync(join(root, BuildFiles.INCLUDE_FILE)))
    throw new LazyError("not_found", `There is no ${FILE} in ${root} to trust; lazy init writes one (and trusts it).`);
  const read = present ? readConfigText(file) : { text: "" };
  const src = "text" in read ? read.text : "";
  const bytes = Buffer.from(src);
  const loaded: ReturnType<typeof loadText> = "text" in read ? loadText(src) : { ok: false, problems: [read.problem] };
  if (!loaded.ok)
    throw new LazyError(
      "config_invalid",
      `${file} does not load, so lazy will not trust it; fix these lines:`,
      loaded.problems.map(formatProblem),
    );
  const values: { [key: string]: string } = {};
  const keys = bearingKeys(src, root, values);
  const build = await BuildFiles.current(root, loaded.config.container);
  const digest = sha(`${sha(bytes)}\n${JSON.stringify(build)}`);
  if (opts.expect !== undefined && opts.expect !== digest)
    throw new LazyError(
      "conflict",
      `${file} or a file it builds from changed while you were looking at it; nothing was trusted. Run lazy trust again to see the change.`,
    );
  ensurePrivateDir(home);
  const book = readBook(home);
  const before = book.files[file];
  const changed = Object.keys(keys).filter((k) => before?.keys[k] !== keys[k]);
  const keyChanges: KeyChange[] = [
    ...changed.map((k) => ({
      key: k,
      how: before?.keys[k] ? ("changed" as const) : ("added" as const),
      was: before?.keys[k] ? (before.values?.[k] ?? null) : null,
      now: values[k] ?? null,
    })),
    ...Object.keys(before?.keys ?? {})
      .filter((k) => !(k in keys))
      .map((k) => ({ key: k, how: "removed" as const, was: before?.values?.[k] ?? null, now: null })),
  ];
  const files = fileChanges(before?.build, build, loaded.config.container.dockerfile);
  const record: TrustRecord = { sha256: sha(bytes), bearing: bearingHash(keys), keys, build, values, trustedAt: new Date().toISOString() };
  if (!opts.dryRun) {
    book.files[file] = record;
    writeFileAtomic(bookPath(home), `${JSON.stringify(book, null, 2)}\n`);
  }
  const anyFile = !!build.context || Object.keys(build.setup).length > 0 || build.include !== null;
  return {
    file,
    sha256: record.sha256,
    changed,
    keyChanges,
    files,
    bearing: Object.keys(keys),
    isNew: !before,
    needed: Object.keys(keys).length > 0 || anyFile,
    digest,
  };
}

/**
 * Every trusted file: path, hash, when, and whether the file on disk and the files beside it
 * that go into the task image or a task (build-files.ts) still match; `changes` names what differs.
 */
export async function list(
  home = lazyHome(),
): Promise<{ file: string; sha256: string; trustedAt: string; state: "matches" | "changed" | "missing"; changes: string[] }[]> {
  const out: { file: string; sha256: string; trustedAt: string; state: "matches" | "changed" | "missing"; changes: string[] }[] = [];
  for (const [file, r] of Object.entries(readBook(home).files)) {
    let state: "matches" | "changed" | "missing" = "missing";
    const changes: string[] = [];
    const root = dirname(file);
    if (existsSync(file) || (r.build?.include && existsSync(root))) {
      try {
        const read = existsSync(file) ? readConfigText(file) : { text: "" };
        if (!("text" in read)) throw new Error(read.problem.message);
        const keys = bearingKeys(read.text, root);
        changes.push(
          ...Object.keys(keys)
            .filter((k) => r.keys[k] !== keys[k])
            .map((k) => `${k} (${r.keys[k] ? "changed" : "added"})`),
          ...Object.keys(r.keys)
            .filter((k) => !(k in keys))
            .map((k) => `${k} (removed)`),
        );
        const loaded = loadText(read.text);
        if (loaded.ok) {
          const now = await BuildFiles.current(root, loaded.config.container);
          changes.push(...fileChanges(r.build, now, loaded.config.container.dockerfile).map(worded));
        }
        state = changes.length ? "changed" : "matches";
      } catch (e) {
        state = "changed";
        changes.push(`(${(e as Error).message})`);
      }
    }
    out.push({ file, sha256: r.sha256, trustedAt: r.trustedAt, state, changes });
  }
  return out.sort((a, b) => (a.file < b.file ? -1 : 1));
}

/** The trust record's own file (the daemon's config watch also watches it). */
export const recordFile = (home = lazyHome()) => bookPath(home);

/**
 * Before a build from the project's Dockerfile: its contents (as about to be built) must be
 * the ones approved with the lazy.toml naming it. A running daemon sees no edit of the
 * Dockerfile alone (the config watch follows lazy.toml), so the build step asks here.
 */
export function checkDockerfile(root: string, named: string, text: string, home = lazyHome()): void {
  const file = join(root, FILE);
  const record = readBook(home).files[file];
  if (record?.keys[DOCKERFILE_CONTENTS] === sha(Buffer.from(text))) return;
  throw LazyError.of("config_untrusted", { reason: "dockerfile_changed", dockerfile: resolve(root, named), file, root });
}

/** How many changed paths a refusal names before "and N more". */
const NAMED = 20;

/**
 * Before lazy uses a file beside lazy.toml that goes into the task image or a task: it must be
 * as approved with `lazy trust` (one record with lazy.toml's). `context`: the build context as
 * about to be sent (the very bytes), or "read" to read it now; `setup` and `include` ask for
 * the files [container] setup names and .worktreeinclude. A change refuses, naming each path
 * and how to approve. Returns nothing; throws `config_untrusted`.
 */
export async function checkFiles(
  root: string,
  container: { dockerfile?: string; setup?: string },
  parts: { context?: BuildFiles.ContextFile[] | "read"; setup?: boolean; include?: boolean },
  home = lazyHome(),
): Promise<void> {
  const record = readBook(home).files[join(root, FILE)];
  const now: Partial<BuildFiles.BuildFiles> = {};
  if (parts.context) {
    const ctx = BuildFiles.contextOfConfig(root, container.dockerfile);
    if (ctx?.copies) {
      const files = parts.context === "read" ? await BuildFiles.readContext(root, ctx.dir) : parts.context;
      now.context = { dir: relative(root, ctx.dir), files: BuildFiles.contextDigests(files) };
    }
  }
  if (parts.setup) now.setup = BuildFiles.setupFiles(root, container.setup);
  if (parts.include) now.include = BuildFiles.includeDigest(root);
  const changes = fileChanges(record?.build, now, container.dockerfile);
  if (!changes.length) return;
  throw LazyError.of(
    "config_untrusted",
    {
      reason: "build_files_changed",
      root,
      since: record?.build ? record.trustedAt : null,
      changed: changes.slice(0, NAMED).map(worded),
      more: Math.max(0, changes.length - NAMED),
    },
    changes.slice(0, NAMED).map((c) => `${c.path} — ${c.how}, ${c.what}`),
  );
}
