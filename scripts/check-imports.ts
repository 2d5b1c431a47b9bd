/**
 * The house rules on imports, checked with Bun's own transpiler (no extra dependency):
 *   1. no import cycle among src/ files;
 *   2. a file imports another folder only through that folder's index.ts (`../proxy`, never
 *      `../proxy/grants`); a folder's own sub-rooms are reached through their index.ts too;
 *   3. a sub-room (a folder with an index.ts) never reaches back into its parent's files
 *      (`proxy/cursor/x.ts` importing `../forward`): what it needs lives in a sibling room, or in
 *      src/'s own files. A folder without an index.ts (cli/commands/) is its parent's, not a room.
 * Prints one line per problem and exits 1 when there is any. `bun scripts/check-imports.ts`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = resolve(import.meta.dir, "..", "src");
const transpiler = new Bun.Transpiler({ loader: "ts" });

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(n) && !n.endsWith(".d.ts") ? [p] : [];
  });
}

function resolveImport(from: string, spec: string): string | undefined {
  if (!spec.startsWith(".")) return undefined;
  const base = resolve(dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")]) if (existsSync(c) && statSync(c).isFile()) return c;
  return undefined;
}

const all = files(ROOT);
const graph = new Map<string, string[]>();
const problems: string[] = [];
const rel = (p: string) => relative(resolve(ROOT, ".."), p);

for (const f of all) {
  const src = readFileSync(f, "utf8");
  // Type-only imports vanish at run time but still tie the folders together: count them too.
  const specs = [
    ...transpiler.scanImports(src).map((i) => i.path),
    ...[...src.matchAll(/^\s*(?:import|export)\s+type\s[^;]*?from\s+["']([^"']+)["']/gm)].map((m) => m[1]!),
  ];
  const targets: string[] = [];
  for (const spec of new Set(specs)) {
    const t = resolveImport(f, spec);
    if (!t) continue;
    targets.push(t);
    // Rule 2: the target's folder, if it is not the importer's own folder (or above it), must be
    // entered through its index.ts.
    const fromDir = dirname(f);
    const toDir = dirname(t);
    const inside = fromDir === toDir || (fromDir + sep).startsWith(toDir + sep);
    // Rule 3: a folder above the importer's own, from a room (src/ itself aside: it has no index.ts;
    // nor what lies outside src/, package.json).
    const room = existsSync(join(fromDir, "index.ts"));
    const inSrc = (t + sep).startsWith(ROOT + sep);
    if (room && inSrc && fromDir !== toDir && inside && toDir !== ROOT)
      problems.push(`${rel(f)} imports ${rel(t)}: a sub-room never imports its parent's files`);
    if (!inside && !t.endsWith(`${sep}index.ts`)) {
      // Reaching a file in another folder: allowed only when that folder has no index.ts (src/ itself).
      if (existsSync(join(toDir, "index.ts")) && toDir !== ROOT)
        problems.push(`${rel(f)} imports ${rel(t)}: go through ${rel(join(toDir, "index.ts"))}`);
    }
  }
  graph.set(f, targets);
}

// Rule 1: cycles, by depth-first search; each cycle reported once.
const state = new Map<string, 1 | 2>();
const stack: string[] = [];
const seen = new Set<string>();
function visit(f: string): void {
  state.set(f, 1);
  stack.push(f);
  for (const t of graph.get(f) ?? []) {
    if (state.get(t) === 1) {
      const cycle = stack.slice(stack.indexOf(t)).map(rel);
      const key = [...cycle].sort().join(" ");
      if (!seen.has(key)) {
        seen.add(key);
        problems.push(`import cycle: ${[...cycle, rel(t)].join(" → ")}`);
      }
    } else if (!state.has(t)) visit(t);
  }
  stack.pop();
  state.set(f, 2);
}
for (const f of all) if (!state.has(f)) visit(f);

for (const p of problems) console.log(p);
console.log(
  problems.length
    ? `check-imports: ${problems.length} problem(s) in ${all.length} files`
    : `check-imports: no cycle, every folder entered through its index.ts, no sub-room reaching into its parent (${all.length} files)`,
);
process.exit(problems.length ? 1 : 0);
