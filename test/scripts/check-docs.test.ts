/**
 * Docs that name only what exists (issue 39, point 5): scripts/check-docs.ts, which `bun run
 * check` runs, reads AGENTS.md, README.md, bench/README.md and the comments of src/, test/,
 * scripts/, bench/ and build.ts, and refuses a path that is gone and a comment that cites a
 * document the repository does not have (notes a clone lacks). Each case plants
 * the stale name in a copy of the repository's files and runs the script on that copy. No Docker,
 * no binary.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
const FILES = Bun.spawnSync(["git", "ls-files", "-co", "--exclude-standard"], { cwd: REPO })
  .stdout.toString()
  .split("\n")
  .filter((f) => f && !f.startsWith("node_modules/"));
let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the repository's files with `plant` applied, checked: what the script printed and its exit code. */
function check(plant: (root: string) => void): { code: number; out: string } {
  dir = mkdtempSync(join(tmpdir(), "lazy-docs-check-"));
  for (const f of FILES) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    try {
      cpSync(join(REPO, f), join(dir, f));
    } catch {} // listed but deleted in the worktree
  }
  plant(dir);
  const r = Bun.spawnSync(["bun", join(REPO, "scripts/check-docs.ts"), dir], { cwd: REPO, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

const edit = (file: string, from: string, to: string) => {
  const text = readFileSync(file, "utf8");
  expect(text).toContain(from);
  writeFileSync(file, text.replace(from, to));
};

describe("check-docs", () => {
  test("today's docs and comments name only what exists, and no comment cites TRAPS.md or WIRE.md", () => {
    const r = check(() => {});
    expect(r.out).toContain(
      "check-docs: every path and name in AGENTS.md, README.md, bench/README.md, docs/wire.md, docs/kubernetes.md and in comments exists",
    );
    expect(r.code).toBe(0);
    const cites = Bun.spawnSync(
      ["git", "grep", "-nE", "TRAPS\\.md|WIRE\\.md|WIRE §", "--", "src", "test", "scripts", "bench", "build.ts"],
      {
        cwd: REPO,
      },
    );
    // This file names them in its own text: the one hit allowed.
    const hits = cites.stdout
      .toString()
      .split("\n")
      .filter((l) => l && !l.startsWith("test/scripts/check-docs.test.ts"));
    expect(hits).toEqual([]);
  });

  test("a comment citing a document outside the repository is refused, in src/, test/ and build.ts alike", () => {
    const r = check((root) => {
      appendFileSync(join(root, "src/util/url.ts"), "// Why: see TRAPS.md.\n");
      appendFileSync(join(root, "test/util/turn.test.ts"), "/** The answer's shape, per WIRE.md §2.4. */\n");
      appendFileSync(join(root, "build.ts"), "// Flags per STYLE.md.\n");
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /src\/util\/url\.ts:\d+: comment cites TRAPS\.md, which is not in the repository: bring what it needs into AGENTS\.md or docs\//,
    );
    expect(r.out).toMatch(/test\/util\/turn\.test\.ts:\d+: comment cites WIRE\.md/);
    expect(r.out).toMatch(/build\.ts:\d+: comment cites STYLE\.md/);
  });

  test("a comment quoting a heading docs/wire.md does not have is refused; one it has passes", () => {
    const r = check((root) => {
      appendFileSync(join(root, "src/util/url.ts"), '// As docs/wire.md, "Runtime traps" and "Cursor", say.\n');
      appendFileSync(join(root, "test/util/turn.test.ts"), '// docs/wire.md: "Key shapes", "Ollama routes".\n');
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      /test\/util\/turn\.test\.ts:\d+: comment cites docs\/wire\.md's "Ollama routes", which is not one of its headings/,
    );
    expect(r.out).not.toContain("src/util/url.ts");
    expect(r.out).toContain("check-docs: 1 stale name(s)");
  });

  test("a comment naming a file that is gone is refused, in a test and a bench too", () => {
    const r = check((root) => {
      appendFileSync(join(root, "test/util/turn.test.ts"), "// Mirrors src/proxy/usage.ts.\n");
      appendFileSync(join(root, "bench/proxy-cpu.ts"), "// Profiles src/proxy/http1.ts.\n");
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/test\/util\/turn\.test\.ts:\d+: comment names src\/proxy\/usage\.ts, which does not exist/);
    expect(r.out).toMatch(/bench\/proxy-cpu\.ts:\d+: comment names src\/proxy\/http1\.ts, which does not exist/);
  });

  test("bench/README.md and README.md naming a path that is gone are refused; a fenced example is not checked", () => {
    const r = check((root) => {
      edit(join(root, "bench/README.md"), "(src/proxy/upstream/exchange.ts)", "(src/proxy/exchange.ts)");
      appendFileSync(
        join(root, "README.md"),
        "\nThe proxy's audit lives in src/proxy/audit-store.ts.\n\n```text\nsrc/a.ts:12: an example review line\n```\n",
      );
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/bench\/README\.md:\d+: src\/proxy\/exchange\.ts does not exist/);
    expect(r.out).toMatch(/README\.md:\d+: src\/proxy\/audit-store\.ts does not exist/);
    expect(r.out).not.toContain("src/a.ts");
    expect(r.out).toContain("check-docs: 2 stale name(s)");
  });
});
