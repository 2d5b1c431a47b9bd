/**
 * What a run's JUnit report (bun test --reporter=junit) says that bun's console output does not:
 * each file's time, slowest first, and every skipped or todo test by name. scripts/test.sh and
 * scripts/test-fast.ts print it after the run (CI shows the tail).
 *   bun scripts/test-report.ts test-artifacts/junit.xml
 */
import { existsSync, readFileSync } from "node:fs";

const unxml = (s: string) =>
  s.replace(/&(lt|gt|quot|apos|amp);/g, (_, e: string) => ({ lt: "<", gt: ">", quot: '"', apos: "'", amp: "&" })[e]!);

function attrs(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w-]+)="([^"]*)"/g)) out[m[1]!] = unxml(m[2]!);
  return out;
}

/** Each file's seconds, and the tests that did not run ("file > suite > name (why)"). */
export function readReport(xml: string): { files: { file: string; seconds: number; tests: number }[]; skipped: string[] } {
  const files: { file: string; seconds: number; tests: number }[] = [];
  const skipped: string[] = [];
  // Bun nests describe blocks as <testsuite> inside the file's <testsuite>; a file's own one is
  // at depth 1 (two spaces under <testsuites>).
  for (const m of xml.matchAll(/^ {2}<testsuite ([^>]*)>/gm)) {
    const a = attrs(m[1]!);
    files.push({ file: a.file ?? a.name ?? "?", seconds: Number(a.time ?? 0), tests: Number(a.tests ?? 0) });
  }
  for (const m of xml.matchAll(/<testcase ([^>]*[^/])>\s*<skipped( message="([^"]*)")?\s*\/>/g)) {
    const a = attrs(m[1]!);
    const where = [a.file, a.classname].filter(Boolean).join(" > ");
    skipped.push(`${where} > ${a.name}${m[3] ? ` (${unxml(m[3])})` : ""}`);
  }
  return { files: files.sort((x, y) => y.seconds - x.seconds), skipped };
}

if (import.meta.main) {
  const path = process.argv[2] ?? "test-artifacts/junit.xml";
  if (!existsSync(path)) {
    console.log(`test-report: no JUnit report at ${path} (bun test ended before writing it)`);
    process.exit(0);
  }
  const { files, skipped } = readReport(readFileSync(path, "utf8"));
  console.log(`--- time per file (${files.length} files, slowest first; JUnit report: ${path}) ---`);
  for (const f of files) console.log(`${f.seconds.toFixed(1).padStart(8)} s  ${String(f.tests).padStart(3)} tests  ${f.file}`);
  console.log(`--- skipped tests: ${skipped.length} ---`);
  for (const s of skipped) console.log(s);
}
