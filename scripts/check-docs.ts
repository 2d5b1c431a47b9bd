/**
 * Docs follow the code: every repository path and every `Class.member` name that AGENTS.md,
 * README.md, bench/README.md and docs/ (wire.md, kubernetes.md) name, and every path a comment names (in src/, test/, scripts/,
 * bench/ and build.ts), must exist; and a comment cites no document outside the repository (a
 * `*.md` it names is one of the repository's: docs/wire.md, AGENTS.md, not a file a clone does not
 * have; a heading of docs/wire.md it quotes is one the page has). A rename that leaves the map behind sends the next reader to a file that is gone; this
 * catches it in `bun run check`. Prints one line per stale name (file:line) and exits 1 when
 * there is any. `bun scripts/check-docs.ts [ROOT]` (ROOT: another checkout, for its test).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const REPO = resolve(process.argv[2] ?? resolve(import.meta.dir, ".."));
const TOP = ["src", "test", "bench", "scripts", "docs", ".ci"];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    if (n === "node_modules" || n === ".git" || n === "dist") return [];
    const p = join(dir, n);
    return statSync(p).isDirectory() ? [`${p}/`, ...walk(p)] : [p];
  });
}

const known = walk(REPO).map((p) => relative(REPO, p));
const srcRooms = readdirSync(join(REPO, "src")).filter((n) => statSync(join(REPO, "src", n)).isDirectory());
const srcFiles = known.filter((p) => p.startsWith("src/") && p.endsWith(".ts")).map((p) => readFileSync(join(REPO, p), "utf8"));

/** `Name.member` exists when a file of src/ defines Name and mentions member (a namespace re-export, `* as Name`, anywhere). */
function symbolExists(name: string, member: string): boolean {
  const defines = new RegExp(`\\b(class|interface|type|const|let|function|namespace|enum)\\s+${name}\\b`);
  const reexports = new RegExp(`\\*\\s+as\\s+${name}\\b`);
  const mentions = new RegExp(`\\b${member}\\b`);
  if (srcFiles.some((text) => reexports.test(text))) return srcFiles.some((text) => mentions.test(text));
  return srcFiles.some((text) => defines.test(text) && mentions.test(text));
}

/** A path in prose: `proxy/meters/quota.ts`, `src/runner/index.ts`, or a bare `quota.ts`. */
const PATH_IN_TEXT = /(?<![\w.@/-])([a-z][\w-]*(?:\/[\w.-]+)*\.ts)\b/g;

/** A path names something in this repository when it starts at a top folder or at one of src/'s rooms. */
function isRepoPath(token: string): boolean {
  const first = token.split("/")[0]!;
  return token.includes("/") && (TOP.includes(first) || srcRooms.includes(first)) && /^[\w./*-]+$/.test(token);
}

/** Found as written, under src/, or as the tail of a known path (a comment may name `cursor/route.ts`). */
function exists(token: string): boolean {
  const t = token.replace(/\/$/, "");
  if (t.includes("*")) {
    const re = new RegExp(`(^|/)${t.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}/?$`);
    return known.some((k) => re.test(k));
  }
  return known.some((k) => {
    const kk = k.replace(/\/$/, "");
    return kk === t || kk === `src/${t}` || kk.endsWith(`/${t}`);
  });
}

/** Names of the runtime, not of lazy: `Bun.build` is checked by Bun, not here. */
const GLOBALS = new Set(["Bun", "JSON", "Math", "Object", "Promise", "Response", "Request", "Date", "Array", "Atomics", "Buffer"]);

const problems: string[] = [];

/** The documents whose paths and names are checked. */
const DOCS = ["AGENTS.md", "README.md", "bench/README.md", "docs/wire.md", "docs/kubernetes.md"];

function checkDoc(doc: string): void {
  const lines = readFileSync(join(REPO, doc), "utf8").split("\n");
  // A fenced block is an example (a review file, a plugin's lazy.toml): its paths are the reader's.
  let fenced = false;
  lines.forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) return;
    const seen = new Set<string>();
    for (const m of line.matchAll(/`([^`\s]+)`/g)) {
      const token = m[1]!.replace(/^["']|["']$/g, "").replace(/^\.\//, "");
      seen.add(token);
      if (isRepoPath(token) && !exists(token)) problems.push(`${doc}:${i + 1}: ${token} does not exist`);
      // `Tasks.byId`, `Proxy.stopTask`: a class or namespace that src/ defines, and its member.
      const sym = /^([A-Z][A-Za-z]+)\.([a-z][A-Za-z]+)(\(.*\))?$/.exec(token);
      if (sym && !GLOBALS.has(sym[1]!) && !symbolExists(sym[1]!, sym[2]!))
        problems.push(`${doc}:${i + 1}: ${sym[1]}.${sym[2]} is not in src/`);
    }
    // Paths in prose, and bare file names (`quota.ts`) found anywhere in the tree.
    for (const m of line.replace(/`[^`]*`/g, " ").matchAll(PATH_IN_TEXT)) {
      const token = m[1]!;
      if ((isRepoPath(token) || !token.includes("/")) && !seen.has(token) && !exists(token))
        problems.push(`${doc}:${i + 1}: ${token} does not exist`);
    }
    for (const token of seen) {
      if (/^[\w-]+\.ts$/.test(token) && !exists(token)) problems.push(`${doc}:${i + 1}: ${token} does not exist`);
    }
  });
}

/** A document a comment cites: `docs/wire.md`, `AGENTS.md`, `bench/README.md`. */
/** Files of a user's project that the harnesses read (a comment names them as data, not as a source). */
const PROJECT_FILES = new Set(["CLAUDE.md", "AGENTS.md", "SKILL.md"]);
const DOC_IN_TEXT = /(?<![\w.@/-])([A-Za-z][\w-]*(?:\/[\w.-]+)*\.md)\b/g;

/** docs/wire.md's headings: a comment cites a section by its heading (`docs/wire.md, "Runtime traps"`). */
const WIRE_HEADINGS = new Set([...readFileSync(join(REPO, "docs/wire.md"), "utf8").matchAll(/^##+ (.+)$/gm)].map((m) => m[1]!.trim()));
/** The headings quoted right after a mention of docs/wire.md: `docs/wire.md: "Key shapes", "Cursor"`, `docs/wire.md ("Cursor")`. */
const wireCited = (comment: string): string[] =>
  [...comment.matchAll(/docs\/wire\.md[,:]?\s*\(?((?:"[^"]+"(?:,\s*)?)+)/g)].flatMap((m) =>
    [...m[1]!.matchAll(/"([^"]+)"/g)].map((q) => q[1]!),
  );

/** The files whose comments are read: lazy's source, its tests, scripts, benches and build. */
const SOURCES = known.filter((p) => /^(src|test|scripts|bench)\/.*\.tsx?$/.test(p) || p === "build.ts");

function checkComments(): void {
  for (const file of SOURCES) {
    readFileSync(join(REPO, file), "utf8")
      .split("\n")
      .forEach((line, i) => {
        const comment = /^\s*(\/\/|\*|\/\*\*?)(.*)$/.exec(line)?.[2];
        if (!comment) return;
        for (const m of comment.matchAll(PATH_IN_TEXT)) {
          const token = m[1]!;
          if (token.includes("/") && isRepoPath(token) && !exists(token))
            problems.push(`${file}:${i + 1}: comment names ${token}, which does not exist`);
        }
        // "Runtime traps" names "Runtime traps (Bun, Elysia, citty)".
        for (const heading of wireCited(comment))
          if (![...WIRE_HEADINGS].some((h) => h === heading || h.startsWith(`${heading} (`)))
            problems.push(`${file}:${i + 1}: comment cites docs/wire.md's "${heading}", which is not one of its headings`);
        for (const m of comment.matchAll(DOC_IN_TEXT)) {
          const token = m[1]!;
          if (!exists(token) && !PROJECT_FILES.has(token.split("/").pop()!))
            problems.push(
              `${file}:${i + 1}: comment cites ${token}, which is not in the repository: bring what it needs into AGENTS.md or docs/ and cite that`,
            );
        }
      });
  }
}

for (const doc of DOCS) checkDoc(doc);
checkComments();
for (const p of problems) console.log(p);
if (problems.length) {
  console.log(`check-docs: ${problems.length} stale name(s); fix the doc or the comment to name what exists`);
  process.exit(1);
}
console.log(`check-docs: every path and name in ${DOCS.join(", ")} and in comments exists (${SOURCES.length} files read)`);
