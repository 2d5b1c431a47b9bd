/**
 * The floors (issue 39): scripts/check-imports.ts, which `bun run check` runs, refuses an import
 * that runs up the declared order of layers, type-only ones too, a folder given no layer, and
 * peers on one floor importing each other. Each case plants the import in a copy of src/ and
 * runs the script there, as `bun run check` would. No Docker, no binary.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dir, "../..");
let dir = "";

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "lazy-floors-"));
  mkdirSync(join(dir, "scripts"));
  cpSync(join(REPO, "scripts/check-imports.ts"), join(dir, "scripts/check-imports.ts"));
  cpSync(join(REPO, "package.json"), join(dir, "package.json"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fresh copy of src/ with `plant` applied, checked; what the script printed and its exit code. */
function check(plant: (src: string) => void): { code: number; out: string } {
  const src = join(dir, "src");
  rmSync(src, { recursive: true, force: true });
  cpSync(join(REPO, "src"), src, { recursive: true });
  plant(src);
  const r = Bun.spawnSync(["bun", join(dir, "scripts/check-imports.ts")], { cwd: dir, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

describe("check-imports: floors", () => {
  test("today's src/ stands on its floors", () => {
    const r = check(() => {});
    expect(r.out).toContain("no import above its floor");
    expect(r.code).toBe(0);
  });

  test("the declared order is the one the issue names: util < store < proxy < runner < daemon < cli", () => {
    const text = readFileSync(join(REPO, "scripts/check-imports.ts"), "utf8");
    const at = (name: string) => text.indexOf(`"${name}"`, text.indexOf("const LAYERS"));
    const order = ["util", "store", "config", "proxy", "containers", "harness", "runner", "daemon", "cli"].map(at);
    expect(order.every((i) => i > 0)).toBe(true);
    expect(at("util") < at("store") && at("store") < at("proxy") && at("proxy") < at("runner")).toBe(true);
    expect(at("runner") < at("daemon") && at("daemon") < at("cli")).toBe(true);
  });

  test("an upward import is refused, naming the file, the import and both floors", () => {
    const r = check((src) =>
      writeFileSync(join(src, "store/floor-probe.ts"), 'import { Keeper } from "../daemon";\nexport const k = Keeper;\n'),
    );
    expect(r.code).toBe(1);
    // The daemon's floor number moves as rooms are added below it; that it is named, above store's, is what counts.
    const m = r.out.match(
      /src\/store\/floor-probe\.ts imports src\/daemon\/index\.ts: an upward import \(store is on floor 2, daemon on floor (\d+)/,
    );
    expect(m).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(2);
  });

  test("a type-only upward import is refused too, in each of its spellings", () => {
    const r = check((src) => {
      // The dashboard's client reading the daemon's types (what the floors moved to dashboard/answers.ts).
      writeFileSync(
        join(src, "dashboard/client/probe-a.ts"),
        'import type { DaemonStatus } from "../../daemon";\nexport type A = DaemonStatus;\n',
      );
      writeFileSync(join(src, "util/probe-b.ts"), 'import { type Task } from "../store";\nexport type B = Task;\n');
      writeFileSync(join(src, "git/probe-c.ts"), 'export type C = typeof import("../runner");\n');
    });
    expect(r.code).toBe(1);
    expect(r.out).toContain("src/dashboard/client/probe-a.ts imports src/daemon/index.ts: an upward import");
    expect(r.out).toContain("src/util/probe-b.ts imports src/store/index.ts: an upward import");
    expect(r.out).toContain("src/git/probe-c.ts imports src/runner/index.ts: an upward import");
    expect(r.out).toContain("check-imports: 3 problem(s)");
  });

  test("peers on one floor may not import each other both ways", () => {
    // config reads git today; git reading config closes a cycle between two peers (no file cycle).
    const r = check((src) =>
      writeFileSync(join(src, "git/probe.ts"), 'import type { Config } from "../config";\nexport type P = Config;\n'),
    );
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/peers on floor 2 import each other: (git → config → git|config → git → config)/);
  });

  test("a folder with no floor is refused until LAYERS names it", () => {
    const r = check((src) => {
      mkdirSync(join(src, "newroom"));
      writeFileSync(join(src, "newroom/index.ts"), "export const x = 1;\n");
    });
    expect(r.code).toBe(1);
    expect(r.out).toContain("src/newroom is on no floor: give it its layer in LAYERS (scripts/check-imports.ts)");
  });

  test("bun run check runs it", () => {
    const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { scripts: { check: string } };
    expect(pkg.scripts.check).toContain("bun scripts/check-imports.ts");
  });
});
