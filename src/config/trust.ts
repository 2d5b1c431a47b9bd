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
import { dirname, join, resolve } from "node:path";
import { parse } from "smol-toml";
import { LazyError } from "../util/errors";
import { ensurePrivateDir, readOwn, writeFileAtomic } from "../util/files";
import { lazyHome } from "../util/paths";
import { FILE, formatProblem, loadText, type Problem, readConfigText } from "./load";
import { locate, pathKey } from "./positions";
import type { Config } from "./schema";

export const TRUST_FILE = "trusted.json";

/** Leaf keys that need no trust; `*` is any one key. */
const INERT = ["server.port", "server.web", "proxy.port", "proxy.first_byte_timeout_s", "notify.desktop"];

export interface TrustRecord {
  /** sha256 of the approved file's bytes. */
  sha256: string;
  /** sha256 of the approved trust-bearing keys and values (what decides). */
  bearing: string;
  /** Per trust-bearing key, a hash of its value: says which keys a later edit changed. */
  keys: { [key: string]: string };
  trustedAt: string;
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
  if ("foreign" in read)
    throw new LazyError(
      "config_untrusted",
      `${p} (what you trusted with lazy trust) is ${read.foreign}, so lazy trusts nothing it says: another user may have written it. Remove it (rm ${p}), then run lazy trust again where you trust the lazy.toml.`,
    );
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
function bearingKeys(src: string, root: string): { [key: string]: string } {
  const keys: { [key: string]: string } = {};
  const doc = parse(src);
  for (const [k, v] of [...leaves(doc)].sort(([a], [b]) => (a < b ? -1 : 1)))
    if (!inert(k)) keys[k] = sha(JSON.stringify(v, (_k, x) => (x instanceof Date ? x.toISOString() : x)));
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
    error: new LazyError(
      "config_untrusted",
      `${file} is ${record ? "changed" : "new"} and not trusted: it sets keys that decide where your credentials go or what runs, and lazy uses them only once you approve them. Look at the file, then run lazy trust in ${dir} (lazy trust --show lists what is trusted).`,
      problems.map(formatProblem),
    ),
  };
}

/** Approve `root/lazy.toml` as it is now: it must load. Returns what changed since the last approval. */
export function approve(
  root: string,
  home = lazyHome(),
): { file: string; sha256: string; changed: string[]; bearing: string[]; isNew: boolean; needed: boolean } {
  const file = join(root, FILE);
  if (!existsSync(file)) throw new LazyError("not_found", `There is no ${FILE} in ${root} to trust; lazy init writes one (and trusts it).`);
  const read = readConfigText(file);
  const src = "text" in read ? read.text : "";
  const bytes = Buffer.from(src);
  const loaded: ReturnType<typeof loadText> = "text" in read ? loadText(src) : { ok: false, problems: [read.problem] };
  if (!loaded.ok)
    throw new LazyError(
      "config_invalid",
      `${file} does not load, so lazy will not trust it; fix these lines:`,
      loaded.problems.map(formatProblem),
    );
  const keys = bearingKeys(src, root);
  ensurePrivateDir(home);
  const book = readBook(home);
  const before = book.files[file];
  const changed = Object.keys(keys).filter((k) => before?.keys[k] !== keys[k]);
  const record: TrustRecord = { sha256: sha(bytes), bearing: bearingHash(keys), keys, trustedAt: new Date().toISOString() };
  book.files[file] = record;
  writeFileAtomic(bookPath(home), `${JSON.stringify(book, null, 2)}\n`);
  return { file, sha256: record.sha256, changed, bearing: Object.keys(keys), isNew: !before, needed: Object.keys(keys).length > 0 };
}

/** Every trusted file: path, hash, when, and whether the file on disk still matches. */
export function list(home = lazyHome()): { file: string; sha256: string; trustedAt: string; state: "matches" | "changed" | "missing" }[] {
  return Object.entries(readBook(home).files)
    .map(([file, r]) => {
      let state: "matches" | "changed" | "missing" = "missing";
      if (existsSync(file)) {
        try {
          const read = readConfigText(file);
          state = "text" in read && bearingHash(bearingKeys(read.text, dirname(file))) === r.bearing ? "matches" : "changed";
        } catch {
          state = "changed";
        }
      }
      return { file, sha256: r.sha256, trustedAt: r.trustedAt, state };
    })
    .sort((a, b) => (a.file < b.file ? -1 : 1));
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
  throw new LazyError(
    "config_untrusted",
    `${resolve(root, named)} (the Dockerfile [container] dockerfile names) changed since you trusted ${file}, and lazy builds only what you approved. Look at it, then run lazy trust in ${root}.`,
  );
}
