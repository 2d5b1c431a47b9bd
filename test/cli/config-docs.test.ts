/**
 * lazy.toml's starter (`lazy init`), its reference (docs/config.md) and its JSON Schema
 * (docs/lazy.schema.json) come from the schema, so none leaves a key out or drifts (issue 37,
 * point 11; issue 39, point 5): every key the JSON Schema has is in the reference with the same
 * default, every key the reference lists is in the starter under its table with that default,
 * the check `bun run check` runs refuses either file when it differs from what the schema says,
 * and refuses a key the schema gives no description. No Docker.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

const REPO = resolve(import.meta.dir, "../..");
const DOCS = join(REPO, "docs/config.md");
const SCHEMA = join(REPO, "docs/lazy.schema.json");

interface Json {
  type?: string;
  default?: unknown;
  description?: string;
  properties?: Record<string, Json>;
  additionalProperties?: Json | boolean;
  items?: Json;
}

/** A value as docs/config.md writes a default (TOML, inline). */
function toml(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(toml).join(", ")}]`;
  if (v && typeof v === "object") {
    const e = Object.entries(v);
    return e.length ? `{ ${e.map(([k, x]) => `${bare(k)} = ${toml(x)}`).join(", ")} }` : "{}";
  }
  return String(v);
}
const bare = (k: string) => (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(k) ? k : JSON.stringify(k));

/** docs/lazy.schema.json's keys, read on their own: `table key` → its default as TOML (or "none"), and its description. */
function schemaKeys(): Map<string, { default: string; description?: string }> {
  const root = JSON.parse(readFileSync(SCHEMA, "utf8")) as Json;
  const out = new Map<string, { default: string; description?: string }>();
  const isTable = (j: Json) => j.type === "object" && !!j.properties;
  const walk = (table: string, j: Json) => {
    for (const [k, v] of Object.entries(j.properties ?? {})) {
      const at = table ? `${table}.${bare(k)}` : bare(k);
      if (isTable(v)) walk(at, v);
      else if (v.type === "object" && typeof v.additionalProperties === "object" && isTable(v.additionalProperties))
        walk(`${at}.NAME`, v.additionalProperties);
      else if (v.type === "array" && v.items && isTable(v.items)) walk(at, v.items);
      else out.set(`${table} ${bare(k)}`, { default: v.default === undefined ? "none" : toml(v.default), description: v.description });
    }
  };
  walk("", root);
  return out;
}

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

describe("docs/lazy.schema.json", () => {
  test("docs/config.md lists every key the JSON Schema has, with the same default", () => {
    const keys = schemaKeys();
    const docs = documented();
    expect(keys.size).toBeGreaterThanOrEqual(80);
    expect([...docs.keys()].sort()).toEqual([...keys.keys()].sort());
    for (const [key, k] of keys) {
      const doc = docs.get(key)!;
      expect(`${key} = ${doc === "required" ? "none" : doc}`).toBe(`${key} = ${k.default}`);
      expect(`${key}: ${k.description ? "described" : "no description"}`).toBe(`${key}: described`);
    }
    // Defaults once applied in code now live in the schema, so the reference shows them.
    expect(docs.get("container base")).toBe('"debian:bookworm"');
    expect(docs.get("models.roles agent")).toBe('"claude"');
  });

  test("is what the schema writes; a drifted copy is refused with the line and the remedy", () => {
    const dir = mkdtempSync(join(tmpdir(), "lazy-schema-"));
    try {
      const drifted = join(dir, "lazy.schema.json");
      writeFileSync(drifted, readFileSync(SCHEMA, "utf8").replace('"default": 26024', '"default": 8080'));
      const r = Bun.spawnSync(["bun", "scripts/gen-config-docs.ts", "--check", "--schema", drifted], { cwd: REPO, stderr: "pipe" });
      expect(r.exitCode).toBe(1);
      const err = r.stderr.toString();
      expect(err).toContain("docs/config.md matches the schema");
      expect(err).toMatch(/lazy\.schema\.json:\d+ differs from the schema/);
      expect(err).toContain('"default": 8080');
      expect(err).toContain("Run bun scripts/gen-config-docs.ts to write it again.");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a key added to the schema without a description fails the check, named by its path", () => {
    // A copy of the sources with one undescribed key planted in [server] and one in [[service]].
    const dir = mkdtempSync(join(tmpdir(), "lazy-undescribed-"));
    try {
      for (const d of ["src", "scripts", "docs"]) cpSync(join(REPO, d), join(dir, d), { recursive: true });
      cpSync(join(REPO, "package.json"), join(dir, "package.json"));
      symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
      const schema = join(dir, "src/config/schema.ts");
      const text = readFileSync(schema, "utf8");
      const planted = text.replace(
        'web: z.boolean().default(true).describe("Serve the dashboard. false turns it off (status then says Web: off)."),',
        'web: z.boolean().default(true).describe("Serve the dashboard. false turns it off (status then says Web: off)."),\n    quiet: z.boolean().default(false),',
      );
      expect(planted).not.toBe(text);
      writeFileSync(schema, planted);
      const services = join(dir, "src/config/services.ts");
      writeFileSync(
        services,
        readFileSync(services, "utf8").replace(
          "  .strictObject({\n    shape:",
          "  .strictObject({\n    note: z.string().optional(),\n    shape:",
        ),
      );
      mkdirSync(join(dir, "out"));
      for (const args of [["--check"], [join(dir, "out/config.md"), "--schema", join(dir, "out/schema.json")]]) {
        const r = Bun.spawnSync(["bun", "scripts/gen-config-docs.ts", ...args], { cwd: dir, stderr: "pipe" });
        const err = r.stderr.toString();
        expect(r.exitCode).toBe(1);
        expect(err).toContain("gen-config-docs: server.quiet has no description in the schema");
        expect(err).toMatch(/gen-config-docs: service\.[a-z_.]*note has no description in the schema/);
        expect(err).toContain('.describe("…") in src/config/schema.ts');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
