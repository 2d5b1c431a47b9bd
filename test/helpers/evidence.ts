/**
 * Checking a `lazy export` bundle the way its reader would, outside lazy: in a SECOND process
 * (a separate bun script, and jq | sha256sum), every part's sha256 and size recomputed from the
 * file and compared with its manifest. Test files share it (test/cli/export, the attacks).
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SCRIPT = `
const doc = JSON.parse(await Bun.file(process.argv[2]).text());
const parts = doc.manifest.parts.map((p) => {
  const text = doc.parts[p.name];
  if (typeof text !== "string") return { name: p.name, ok: false, why: "missing" };
  const bytes = Buffer.from(text, "utf8");
  const sha = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
  return { name: p.name, ok: sha === p.sha256 && bytes.length === p.bytes, sha };
});
const unlisted = Object.keys(doc.parts).filter((n) => !doc.manifest.parts.some((p) => p.name === n));
console.log(JSON.stringify({ parts, unlisted }));
`;

export interface Checked {
  /** Per part: whether the bun script's sha256 and size match the manifest, and the sha256 it computed. */
  parts: { name: string; ok: boolean; sha?: string }[];
  /** Parts in the document the manifest does not list. */
  unlisted: string[];
  /** Per part, sha256sum's answer for `jq -j .parts[NAME]` (another tool reading the same bytes). */
  sha256sum: Record<string, string>;
}

/**
 * Recompute every part's sha256 of the bundle at `file` in other processes. Without jq the
 * second reading would be of nothing (sha256sum of an empty pipe): it fails, naming the remedy.
 */
export async function verifyBundle(file: string): Promise<Checked> {
  // Today's PATH, not the one the test process started with (Bun.spawn's default).
  const env = { ...process.env };
  if (!Bun.which("jq", { PATH: env.PATH ?? "" }))
    throw new Error(
      `verifyBundle: jq is not on PATH (${env.PATH ?? ""}); the bundle check reads each part with jq | sha256sum. Install it: apt-get install jq (scripts/setup-test-env.sh installs it)`,
    );
  const script = join(tmpdir(), `lazy-verify-${process.pid}.ts`);
  writeFileSync(script, SCRIPT);
  const p = Bun.spawn([process.execPath, script, file], { stdout: "pipe", stderr: "pipe", env });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`the verifying script failed: ${err}`);
  const checked = JSON.parse(out) as Omit<Checked, "sha256sum">;
  const sha256sum: Record<string, string> = {};
  for (const part of checked.parts) {
    const s = Bun.spawn(["bash", "-c", 'set -o pipefail; jq -j --arg n "$1" \'.parts[$n]\' "$2" | sha256sum', "_", part.name, file], {
      stdout: "pipe",
      stderr: "pipe",
      env,
    });
    const [sum, why, exit] = await Promise.all([new Response(s.stdout).text(), new Response(s.stderr).text(), s.exited]);
    if (exit !== 0) throw new Error(`verifyBundle: jq | sha256sum failed on part ${part.name} (exit ${exit}): ${why.trim()}`);
    sha256sum[part.name] = sum.split(" ")[0]!;
  }
  return { ...checked, sha256sum };
}
