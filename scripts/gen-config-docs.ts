/**
 * docs/config.md (lazy.toml's reference) and docs/lazy.schema.json (its JSON Schema) are written
 * from the schema (src/config/reference.ts): `bun scripts/gen-config-docs.ts` writes both;
 * `--check` (in `bun run check`) exits 1 when a checked-in file differs from what it would write,
 * naming the first line that does, so neither can drift from the schema the loader uses. Either
 * way a key or table of the schema without a description is refused, named by its path.
 * `[FILE]` and `--schema FILE` check or write other copies (the tests' drifted ones).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Reference } from "../src/config";

const args = process.argv.slice(2);
const check = args.includes("--check");
const at = args.indexOf("--schema");
const schemaFile = resolve(at >= 0 && args[at + 1] ? args[at + 1]! : resolve(import.meta.dir, "../docs/lazy.schema.json"));
const positional = args.filter((a, i) => !a.startsWith("--") && args[i - 1] !== "--schema");
const docsFile = resolve(positional[0] ?? resolve(import.meta.dir, "../docs/config.md"));

const bare = Reference.undescribed();
if (bare.length) {
  for (const path of bare) console.error(`gen-config-docs: ${path} has no description in the schema`);
  console.error(
    `gen-config-docs: every key and table of lazy.toml needs one (.describe("…") in src/config/schema.ts); the reference is made from them.`,
  );
  process.exit(1);
}

const outputs = [
  { file: docsFile, want: Reference.markdown() },
  { file: schemaFile, want: Reference.jsonSchema() },
];

if (!check) {
  for (const o of outputs) {
    writeFileSync(o.file, o.want);
    console.error(`wrote ${o.file}`);
  }
  process.exit(0);
}

let failed = false;
for (const { file, want } of outputs) {
  let have = "";
  try {
    have = readFileSync(file, "utf8");
  } catch {
    console.error(`gen-config-docs: ${file} is missing; run bun scripts/gen-config-docs.ts`);
    failed = true;
    continue;
  }
  if (have === want) {
    console.error(`gen-config-docs: ${file} matches the schema`);
    continue;
  }
  failed = true;
  const a = have.split("\n");
  const b = want.split("\n");
  const first = a.findIndex((l, i) => l !== b[i]);
  const n = first === -1 ? a.length : first;
  console.error(
    `gen-config-docs: ${file}:${n + 1} differs from the schema (src/config/schema.ts):\n  file:   ${a[n] ?? "(end of file)"}\n  schema: ${b[n] ?? "(end of file)"}\nRun bun scripts/gen-config-docs.ts to write it again.`,
  );
}
process.exit(failed ? 1 : 0);
