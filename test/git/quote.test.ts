/**
 * Reading back the paths git quotes: every name a real git prints in quotes (a patch header,
 * blame's porcelain) comes back as the name the file has.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unquotePath } from "../../src/git";

test("a bare path is itself; malformed quoting is refused rather than guessed", () => {
  expect(unquotePath("src/a.ts")).toBe("src/a.ts");
  expect(unquotePath('"a\\tb"')).toBe("a\tb");
  expect(unquotePath('"unterminated')).toBeNull();
  expect(unquotePath('"a\\qb"')).toBeNull();
  expect(unquotePath('"a"b"')).toBeNull();
});

test("every name git quotes in a patch header reads back to the file's own name", () => {
  const dir = mkdtempSync(join(tmpdir(), "lazy-quote-"));
  try {
    const run = (...args: string[]) => {
      const r = Bun.spawnSync(["git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
      if (r.exitCode !== 0) throw new Error(r.stderr.toString());
      return r.stdout.toString();
    };
    run("init", "-q");
    const names = ["données/é.ts", "tab\there.ts", 'quote"d.ts', "back\\slash.ts", "new\nline.ts", "plain.ts", "日本.md"];
    for (const n of names) {
      Bun.spawnSync(["mkdir", "-p", join(dir, n, "..")]);
      writeFileSync(join(dir, n), "x\n");
    }
    run("add", "-A");
    run("commit", "-qm", "names");
    const headers = run("show", "--format=", "-p", "HEAD")
      .split("\n")
      .filter((l) => l.startsWith("+++ "))
      .map((l) => l.slice(4));
    // git quotes the whole "b/…" path: unquote first, then drop the prefix.
    const back = headers.map((h) => unquotePath(h)!.replace(/^b\//, ""));
    expect(back.sort()).toEqual([...names].sort());
    expect(headers.some((h) => h.startsWith('"'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
