/**
 * Issue 30: `lazy diff T --stat` on a 5,000-file change against `git diff --stat` of the same
 * range, in one run, interleaved, medians (target ≤ 1.5×). Both are whole processes as a person
 * runs them: lazy's includes its CLI start, the API round trip and the daemon's hardened git
 * (rev-parse, merge-base, numstat; the counts and fork point are kept per commit pair, so the
 * warm rounds read them, and the cold rounds give the branch a new tip each time).
 * Usage: bun bench/diff.ts [rounds=15] [files=5000]
 */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pct, timeProcess, fmt, trustToml } from "./lib";

const rounds = Number(process.argv[2] ?? 15);
const files = Number(process.argv[3] ?? 5000);
const bin = process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy");

const root = mkdtempSync(join(tmpdir(), "lazy-bench-diff-"));
chmodSync(root, 0o755);
const home = mkdtempSync(join(tmpdir(), "lazy-bench-diff-home-"));
const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file" };
const sh = (cmd: string) => {
  const r = Bun.spawnSync(["sh", "-c", cmd], { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd}: ${r.stderr}`);
  return r.stdout.toString();
};
try {
  sh("git init -q -b main && git config user.email b@e.com && git config user.name B && printf 'lazy.toml\\n' > .gitignore");
  for (let i = 0; i < files; i++) {
    const dir = join(root, "src", String(i % 50));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.txt`), `line one of ${i}\nline two\nline three\n`);
  }
  sh("git add -A && git commit -qm base");
  writeFileSync(join(root, "lazy.toml"), "");
  trustToml(bin, root, env);
  sh(`${bin} task add "bench" --code big`);
  sh("git checkout -qb lazy/big");
  for (let i = 0; i < files; i++)
    writeFileSync(join(root, "src", String(i % 50), `f${i}.txt`), `line one of ${i}\nline TWO\nline three\nadded\n`);
  sh("git commit -qam change && git checkout -q main");
  const base = sh("git merge-base main lazy/big").trim();
  const lazyT: number[] = [];
  const gitT: number[] = [];
  timeProcess([bin, "diff", "big", "--stat"], env, root); // warm: daemon up, caches filled
  for (let r = 0; r < rounds; r++) {
    gitT.push(timeProcess(["git", "diff", "--stat", base, "lazy/big"], env, root));
    lazyT.push(timeProcess([bin, "diff", "big", "--stat"], env, root));
    if (process.env.PARTS) {
      (globalThis as any).parts ??= { list: [], json: [], gitn: [] };
      (globalThis as any).parts.list.push(timeProcess([bin, "task", "list"], env, root));
      (globalThis as any).parts.json.push(timeProcess([bin, "diff", "big", "--stat", "--json"], env, root));
      (globalThis as any).parts.gitn.push(timeProcess(["git", "diff", "--numstat", "-z", base, "lazy/big"], env, root));
    }
  }
  // Cold: a new tip each round (same tree), so lazy's counts kept per commit pair do not apply.
  // The daemon counts a task branch that moved ahead (dashboard/diff-ahead.ts): "after git"
  // reads it once git's own diff has run (as a person reads a diff some time after the turn
  // that moved it), "at once" the moment the branch moved (lazy first, then git), racing the count.
  const coldL: number[] = [];
  const coldG: number[] = [];
  const onceL: number[] = [];
  const onceG: number[] = [];
  const newTip = () => sh("git update-ref refs/heads/lazy/big $(git commit-tree 'lazy/big^{tree}' -p lazy/big -m again)");
  for (let r = 0; r < Math.max(3, Math.floor(rounds / 3)); r++) {
    newTip();
    coldG.push(timeProcess(["git", "diff", "--stat", base, "lazy/big"], env, root));
    coldL.push(timeProcess([bin, "diff", "big", "--stat"], env, root));
    newTip();
    onceL.push(timeProcess([bin, "diff", "big", "--stat"], env, root));
    onceG.push(timeProcess(["git", "diff", "--stat", base, "lazy/big"], env, root));
  }
  const lm = pct(lazyT, 50);
  const gm = pct(gitT, 50);
  console.log(`${files} files changed, ${rounds} rounds interleaved`);
  console.log(`git diff --stat   median ${fmt(gm)}  p90 ${fmt(pct(gitT, 90))}`);
  console.log(`lazy diff --stat  median ${fmt(lm)}  p90 ${fmt(pct(lazyT, 90))}`);
  if (process.env.PARTS) for (const [k, v] of Object.entries((globalThis as any).parts)) console.log(k, fmt(pct(v as number[], 50)));
  console.log(`ratio ${(lm / gm).toFixed(2)}× (target ≤ 1.5×)`);
  const cl = pct(coldL, 50);
  const cg = pct(coldG, 50);
  console.log(
    `cold, after git (a new tip each round, ${coldL.length} rounds): git ${fmt(cg)}, lazy ${fmt(cl)}, ratio ${(cl / cg).toFixed(2)}×`,
  );
  const ol = pct(onceL, 50);
  const og = pct(onceG, 50);
  console.log(`cold, at once (lazy asked the moment the tip moved): git ${fmt(og)}, lazy ${fmt(ol)}, ratio ${(ol / og).toFixed(2)}×`);
} finally {
  Bun.spawnSync([bin, "daemon", "stop"], { cwd: root, env });
  for (const d of [root, home]) rmSync(d, { recursive: true, force: true });
}
