/**
 * containers/tar.ts: what lazy ships to a remote engine unpacks as written (GNU tar reads it:
 * long names through PAX, links as links, owners and modes), and what comes back from a
 * container is read as hostile: a bad checksum, a file running past the end, a link, a file
 * over the caller's bound and a total over the bound are each refused or kept out.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Tar } from "../../src/containers";
import { sh } from "../helpers/lazy";

const long = `${"deep/".repeat(40)}file.txt`;
const entries: Tar.Entry[] = [
  { name: "/top", type: "dir", mode: 0o750, uid: 1234 },
  { name: "/top/a.txt", type: "file", mode: 0o640, uid: 1234, data: Buffer.from("hello") },
  { name: `/top/${long}`, type: "file", mode: 0o644, uid: 0, data: () => Buffer.from("far down") },
  { name: "/top/link", type: "link", mode: 0o777, uid: 0, target: "../../etc/passwd" },
];

describe("tar", () => {
  test("what lazy writes, GNU tar unpacks: names past 100 bytes, links not followed, owners and modes", () => {
    const dir = mkdtempSync(join(tmpdir(), "lazy-tar-"));
    try {
      writeFileSync(join(dir, "a.tar"), Buffer.concat(Tar.write(entries)));
      const r = sh(dir, "mkdir out && tar -xpf a.tar -C out --numeric-owner --same-owner");
      expect(r.code, r.err).toBe(0);
      expect(readFileSync(join(dir, "out/top/a.txt"), "utf8")).toBe("hello");
      expect(readFileSync(join(dir, "out/top", long), "utf8")).toBe("far down");
      expect(readlinkSync(join(dir, "out/top/link"))).toBe("../../etc/passwd");
      const st = statSync(join(dir, "out/top/a.txt"));
      expect(st.mode & 0o777).toBe(0o640);
      if (process.getuid?.() === 0) expect(st.uid).toBe(1234);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("reading back: kept only what the caller asks for, within its bound; links and folders named, never kept", () => {
    const buf = Buffer.concat(Tar.write(entries));
    const got = Tar.read(buf, (name) => name.endsWith(".txt"), 1024);
    expect(got.map((e) => `${e.type} ${e.name}`)).toEqual(["dir top", "file top/a.txt", `file top/${long}`, "other top/link"]);
    expect(Buffer.from(got[1]!.data!).toString()).toBe("hello");
    expect(got[3]!.data).toBeUndefined();
    // Over the total bound: refused, not truncated.
    expect(() => Tar.read(buf, () => true, 8)).toThrow(Tar.TarRefused);
  });

  test("a forged header is refused: bad checksum, a size past the end, a size that is not octal", () => {
    const good = Buffer.concat(Tar.write([{ name: "x", type: "file", mode: 0o644, uid: 0, data: Buffer.from("abc") }]));
    const badSum = Buffer.from(good);
    badSum[0] = "y".charCodeAt(0);
    expect(() => Tar.read(badSum, () => true, 1 << 20)).toThrow("checksum");
    // A header claiming 1 GiB, checksum fixed up: the archive ends inside it.
    const huge = Buffer.from(good);
    huge.write("10000000000\0", 124, "latin1");
    fixSum(huge);
    expect(() => Tar.read(huge, () => true, 1 << 20)).toThrow("ends inside a file");
    const notOctal = Buffer.from(good);
    notOctal.write("9999\0", 124, "latin1");
    fixSum(notOctal);
    expect(() => Tar.read(notOctal, () => true, 1 << 20)).toThrow("not octal");
  });
});

function fixSum(h: Buffer): void {
  h.write("        ", 148, "latin1");
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += h[i]!;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
}
