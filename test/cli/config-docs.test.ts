/**
 * lazy.toml's starter (`lazy init`) and its reference (docs/config.md) come from the schema, so
 * neither leaves a key out or drifts (issue 37, point 11): every key the reference lists is in
 * the starter under its table, with the same default, and the check `bun run check` runs
 * refuses a docs/config.md that differs from what the schema says. No Docker.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const REPO = resolve(import.meta.dir, "../..");
const DOCS = join(REPO, "docs/config.md");

/** docs/config.md's keys: `table key` → the default as written (or "required"/"none"). */
function documented(): Map<string, string> {
  const out = new Map<string, string>();
  let table = "";
  for (const line of readFileSync(DOCS, "utf8").split("\n")) {
    const h = line.match(/^## \[\[?([^\]]+)\]\]?$/);
    if (h) table = h[1]!;
    const row = line.match(/^\| `([^`]+)` \| .*? \| (`(.*?)`|required|none) \| /);
    if (row) out.set(`${table} ${row[1]}`, row[3] ?? row[2]!);
  }
  return out;
}

/** The starter's keys: `table key` → the value shown. Named tables are shown with an example name. */
function started(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let table = "";
  for (const line of text.split("\n")) {
    const h = line.match(/^# \[\[?([^\]]+)\]\]?$/);
    if (h) table = h[1]!.replace(/^profiles\.[a-z0-9_-]+$/, "profiles.NAME").replace(/^prices\."[^"]+"$/, "prices.NAME");
    const kv = line.match(/^# ("[^"]+"|[A-Za-z_][\w-]*) = (.*)$/);
    if (kv && table) out.set(`${table} ${kv[1]}`, kv[2]!);
  }
  return out;
}

describe("lazy init's starter", () => {
  test("shows every key docs/config.md lists, under its table, with the same default", async () => {
    const p = new Project();
    await p.ok(["init"]);
    const text = readFileSync(join(p.root, "lazy.toml"), "utf8");
    const docs = documented();
    const starter = started(text);
    // The schema has more than the 53 keys the old starter was measured against.
    expect(docs.size).toBeGreaterThanOrEqual(53);
    expect([...starter.keys()].sort()).toEqual([...docs.keys()].sort());
    for (const [key, value] of docs)
      if (value !== "required" && value !== "none") expect(`${key} = ${starter.get(key)}`).toBe(`${key} = ${value}`);
    // Tables of tables and arrays of tables are written as TOML has them.
    expect(text).toContain("# [[proxy.fallback]]");
    expect(text).toContain("# [[service]]");
    expect(text).toContain("# [service.app]");
    expect(text).toContain('# "5h" = 80');
    // Everything is commented out: it loads, and runs on the defaults.
    const status = await p.ok(["daemon", "start"]);
    expect(status.stdout).toContain("Config:    ok (lazy.toml");
  });

  test("each table's keys, uncommented, load as lazy.toml", async () => {
    // The examples are real values for their keys: a table uncommented alone is a valid file
    // (tables with keys that exclude each other get one of them).
    const p = new Project();
    await p.ok(["init"]);
    const text = readFileSync(join(p.root, "lazy.toml"), "utf8");
    const exclusive = ["# dockerfile = ", "# webhook_credential = ", "# command = ", "# header = "];
    const blocks = text.split("\n\n").slice(1);
    expect(blocks.length).toBeGreaterThan(15);
    for (const block of blocks) {
      if (block.includes("# [service.app]")) continue; // belongs to a [[service]] (below)
      const lines = block
        .split("\n")
        .filter((l) => l.startsWith("# ") && !exclusive.some((x) => l.startsWith(x)))
        .map((l) => l.slice(2));
      writeFileSync(join(p.root, "lazy.toml"), `${lines.join("\n")}\n`);
      // lazy trust refuses a file that does not load, naming each line.
      const r = await p.run(["trust", "--yes"]);
      expect(`${lines[0]}: ${r.code === 0 ? "loads" : r.stderr}`).toBe(`${lines[0]}: loads`);
    }
  });
});

describe("docs/config.md", () => {
  test("is what the schema writes; a drifted copy is refused with the line and the remedy", () => {
    const gen = (...args: string[]) =>
      Bun.spawnSync(["bun", "scripts/gen-config-docs.ts", "--check", ...args], { cwd: REPO, stderr: "pipe" });
    const same = gen();
    expect(same.stderr.toString()).toContain("matches the schema");
    expect(same.exitCode).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), "lazy-docs-"));
    try {
      const drifted = join(dir, "config.md");
      writeFileSync(drifted, readFileSync(DOCS, "utf8").replace("| `26024` |", "| `8080` |"));
      const r = gen(drifted);
      expect(r.exitCode).toBe(1);
      const err = r.stderr.toString();
      expect(err).toMatch(/config\.md:\d+ differs from the schema/);
      expect(err).toContain("`8080`");
      expect(err).toContain("Run bun scripts/gen-config-docs.ts to write it again.");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("bun run check runs that check", () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { scripts: { check: string } };
    expect(pkg.scripts.check).toContain("bun scripts/gen-config-docs.ts --check");
  });
});
