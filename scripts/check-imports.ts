/**
 * The house rules on imports, checked with Bun's own transpiler (no extra dependency):
 *   1. no import cycle among src/ files;
 *   2. a file imports another folder only through that folder's index.ts (`../proxy`, never
 *      `../proxy/grants`); a folder's own sub-rooms are reached through their index.ts too;
 *   3. a sub-room (a folder with an index.ts) never reaches back into its parent's files
 *      (a file of `proxy/request/` importing `../index`): what it needs lives in a sibling room, or in
 *      src/'s own files. A folder without an index.ts (cli/commands/) is its parent's, not a room;
 *   4. floors: every folder of src/ (and every file at its top) stands on one layer of LAYERS
 *      below, and imports only from lower layers, or from a peer on its own layer as long as the
 *      peers' imports form no cycle. Type-only imports count: they tie the folders together too.
 *      A folder that is in no layer is a problem until it is given one.
 * Prints one line per problem and exits 1 when there is any. `bun scripts/check-imports.ts`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

/**
 * The floors of src/, lowest first: the one declared order of lazy's layers (AGENTS.md points
 * here). Derived from the imports of issue 39's day and then decided: a folder on a layer may
 * import any folder on a lower layer, and a peer on its own layer when the peers' imports form
 * no cycle (config reads git; bus reads store). A moved or new folder gets its line here.
 */
const LAYERS: readonly (readonly string[])[] = [
  // Leaves: they import nothing of lazy's but util.
  ["util", "version.ts", "prices", "review", "supervisor", "agent-dir", "network"],
  // What lazy keeps and reads: the task store, git, secrets, disk, lazy.toml, the event bus.
  // (agent-dir, below it, is the hostile-path file layer git reads a container's files through;
  // network, what a container can reach, is below containers/, which hands it the engine.)
  ["store", "git", "credentials", "disk", "config", "bus"],
  // What runs agents and carries their calls: harnesses, containers, the model proxy, checks.
  ["harness", "containers", "proxy", "preflight", "notify", "diff"],
  // Services built on those: spending rules, the live feed, egress, own calls, MCP, the broker,
  // a task's side of a remote engine; a task's diff (diff) sits on the floor below.
  // Where each agent commit came from (provenance: trace records as git notes, lazy trace).
  ["spending", "watch", "lines", "egress", "own-calls", "mcp", "broker", "remote", "provenance"],
  // Best-of-N (its group, check and comparison), under the runner that makes groups; a task's
  // evidence bundle (lazy export); OpenTelemetry export of a turn (it reads egress's rows).
  ["compare", "export", "telemetry"],
  // The task runner, and the dashboard's pages and the API's answer shapes (dashboard/answers.ts).
  ["runner", "dashboard"],
  // The per-project daemon: the composition root and its API.
  ["daemon"],
  // The command line, then the binary's entry.
  ["cli"],
  ["index.ts"],
];

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
  // Type-only imports vanish at run time but still tie the folders together: count them too
  // (`import type`, `import { type A }`, `export { type B } from`, a type's `import("…")`).
  const specs = [
    ...transpiler.scanImports(src).map((i) => i.path),
    ...[...src.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+["']([^"']+)["']/gm)].map((m) => m[1]!),
    ...[...src.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!),
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

// Rule 4: floors. A top-level name: `proxy` for src/proxy/**, `version.ts` for src/version.ts.
const top = (p: string) => relative(ROOT, p).split(sep)[0]!;
const floor = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, i] as const)));
const tops = new Set(all.map(top));
for (const name of [...tops].sort())
  if (!floor.has(name)) problems.push(`src/${name} is on no floor: give it its layer in LAYERS (scripts/check-imports.ts)`);
for (const name of floor.keys()) if (!tops.has(name)) problems.push(`LAYERS names ${name}, which src/ does not have: drop or rename it`);
/** Peers' imports on one floor, folder to folder, for the cycle check. */
const peers = new Map<string, Set<string>>();
for (const [f, targets] of graph) {
  const a = top(f);
  const fa = floor.get(a);
  if (fa === undefined) continue;
  for (const t of targets) {
    if (!(t + sep).startsWith(ROOT + sep)) continue;
    const b = top(t);
    const fb = floor.get(b);
    if (a === b || fb === undefined) continue;
    if (fb > fa)
      problems.push(
        `${rel(f)} imports ${rel(t)}: an upward import (${a} is on floor ${fa + 1}, ${b} on floor ${fb + 1} of LAYERS in scripts/check-imports.ts); move what both need down, or the importer up`,
      );
    else if (fb === fa) {
      if (!peers.has(a)) peers.set(a, new Set());
      peers.get(a)!.add(b);
    }
  }
}
// Peers on one floor: their folder-to-folder imports form no cycle.
const mark = new Map<string, 1 | 2>();
const trail: string[] = [];
function climb(a: string): void {
  mark.set(a, 1);
  trail.push(a);
  for (const b of peers.get(a) ?? []) {
    if (mark.get(b) === 1)
      problems.push(`peers on floor ${floor.get(a)! + 1} import each other: ${[...trail.slice(trail.indexOf(b)), b].join(" → ")}`);
    else if (!mark.has(b)) climb(b);
  }
  trail.pop();
  mark.set(a, 2);
}
for (const a of peers.keys()) if (!mark.has(a)) climb(a);

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
    : `check-imports: no cycle, every folder entered through its index.ts, no sub-room reaching into its parent, no import above its floor (${all.length} files)`,
);
process.exit(problems.length ? 1 : 0);
