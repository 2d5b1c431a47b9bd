/**
 * The bundle check (helpers/evidence.ts) reads each part a second way, with jq | sha256sum: on a
 * machine without jq it fails, naming jq and how to install it, instead of comparing the hash of
 * an empty pipe.
 */
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { verifyBundle } from "./evidence";

const dirs: string[] = [];
const PATH = process.env.PATH;
afterEach(() => {
  process.env.PATH = PATH;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A bundle of two parts, its manifest right. */
function bundle(): string {
  const dir = mkdtempSync(join(tmpdir(), "lazy-evidence-"));
  dirs.push(dir);
  const parts = { "a.json": '{"x":1}\n', "b.txt": "é and more\n" };
  const manifest = {
    parts: Object.entries(parts).map(([name, text]) => ({
      name,
      sha256: new Bun.CryptoHasher("sha256").update(text).digest("hex"),
      bytes: Buffer.byteLength(text),
    })),
  };
  const file = join(dir, "bundle.json");
  writeFileSync(file, JSON.stringify({ manifest, parts }));
  return file;
}

test("with jq, every part is read twice and each reading matches the manifest", async () => {
  const file = bundle();
  const checked = await verifyBundle(file);
  expect(checked.parts.map((p) => p.ok)).toEqual([true, true]);
  for (const p of checked.parts) expect(checked.sha256sum[p.name]).toBe(p.sha!);
});

test("without jq on PATH the check fails, naming jq and the remedy, rather than passing on an empty pipe", async () => {
  const file = bundle();
  // A PATH with everything the check runs but jq.
  const bin = mkdtempSync(join(tmpdir(), "lazy-nojq-"));
  dirs.push(bin);
  for (const tool of ["bash", "sha256sum"]) symlinkSync(Bun.which(tool)!, join(bin, tool));
  process.env.PATH = bin;
  await expect(verifyBundle(file)).rejects.toThrow(/jq is not on PATH .*Install it: apt-get install jq/);
});
