/**
 * All SQL lives in src/store/ (issue 27): a statement anywhere else in src/ is a problem.
 * Comments are dropped first (Bun's transpiler), so prose that names a statement does not
 * count; what is left is matched for the statements lazy writes (upper-case keywords, as in
 * the store). Prints one line per problem and exits 1 when there is any. `bun scripts/check-sql.ts`.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";

const ROOT = resolve(import.meta.dir, "..", "src");
const STORE = join(ROOT, "store") + sep;
const transpiler = new Bun.Transpiler({ loader: "ts", trimUnusedImports: false });
const SQL =
  /\b(?:SELECT\s[^'"`\n]*?\bFROM\s+\w|INSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\s+\w|UPDATE\s+\w+\s+SET\b|DELETE\s+FROM\s+\w|(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX|UNIQUE\s+INDEX|VIEW|TRIGGER)\b|PRAGMA\s+\w|BEGIN\s+(?:IMMEDIATE|TRANSACTION)\b)/;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(n) && !n.endsWith(".d.ts") ? [p] : [];
  });
}

const all = files(ROOT).filter((f) => !f.startsWith(STORE));
const problems = new Set<string>();
for (const f of all) {
  const src = readFileSync(f, "utf8");
  // A macro import would run (and fail, out of place): read it as a plain import.
  const code = transpiler.transformSync(src.replace(/\s+with\s*\{\s*type:\s*["']macro["']\s*\}/g, ""));
  for (const line of code.split("\n")) {
    const m = SQL.exec(line);
    if (!m) continue;
    // The line in the source, for the report: the first that holds what matched.
    const at = src.split("\n").findIndex((l) => l.includes(m[0]));
    problems.add(
      `${relative(resolve(ROOT, ".."), f)}${at === -1 ? "" : `:${at + 1}`}: SQL outside src/store/ ("${m[0]}"): move it into a function in src/store/`,
    );
  }
}
for (const p of problems) console.log(p);
console.log(
  problems.size
    ? `check-sql: ${problems.size} statement(s) outside src/store/`
    : `check-sql: no SQL outside src/store/ (${all.length} files)`,
);
process.exit(problems.size ? 1 : 0);
