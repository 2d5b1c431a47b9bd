/**
 * docs/config.md is lazy.toml's reference, written from the schema (src/config/reference.ts):
 * `bun scripts/gen-config-docs.ts` writes it; `--check [FILE]` (in `bun run check`) exits 1 when
 * the checked-in file differs from what it would write, naming the first line that does, so
 * the reference cannot drift from the schema the loader uses.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Reference } from "../src/config";

const args = process.argv.slice(2);
const check = args.includes("--check");
const file = resolve(args.find((a) => !a.startsWith("--")) ?? resolve(import.meta.dir, "../docs/config.md"));
const want = Reference.markdown();

if (!check) {
  writeFileSync(file, want);
  console.error(`wrote ${file}`);
  process.exit(0);
}
let have = "";
try {
  have = readFileSync(file, "utf8");
} catch {
  console.error(`gen-config-docs: ${file} is missing; run bun scripts/gen-config-docs.ts`);
  process.exit(1);
}
if (have === want) {
  console.error(`gen-config-docs: ${file} matches the schema`);
  process.exit(0);
}
const a = have.split("\n");
const b = want.split("\n");
const at = a.findIndex((l, i) => l !== b[i]);
const n = at === -1 ? a.length : at;
console.error(
  `gen-config-docs: ${file}:${n + 1} differs from the schema (src/config/schema.ts):\n  file:   ${a[n] ?? "(end of file)"}\n  schema: ${b[n] ?? "(end of file)"}\nRun bun scripts/gen-config-docs.ts to write it again.`,
);
process.exit(1);
