/**
 * Issue 30: `lazy diff T --stat` on a 5,000-file change against `git diff --stat` of the same
 * range, in one run, interleaved, medians (target ≤ 1.5×). Both are whole processes as a person
 * runs them: lazy's includes its CLI start, the API round trip and the daemon's hardened git
 * (rev-parse, merge-base, numstat; the counts and fork point are kept per commit pair, so the
 * warm rounds read them, and the cold rounds give the branch a new tip each time).
 * The daemon counts a task branch that moved ahead (diff/ahead.ts): "cold, 200 ms
 * after" reads a new tip a moment after it moved (as a person reads a diff after the turn that
 * moved it; git then lazy), "cold, at once" the moment the branch moved (lazy first, then git),
 * racing that count. LAZY_BENCH_OLD=PATH runs an older build too, on the same repository with a
 * LAZY_HOME of its own, in the same rounds (order rotating), so both are measured on one machine.
 * Usage: bun bench/diff.ts [rounds=15] [files=5000]
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fmt, pct, timeProcess, trustToml } from "./lib";

const rounds = Number(process.argv[2] ?? 15);
const AFTER_MS = 200;
const files = Number(process.argv[3] ?? 5000);
const builds: { name: string; bin: string; env: Record<string, string>; home: string }[] = [];
const add = (name: string, bin: string) => {
  const home = mkdtempSync(join(tmpdir(), "lazy-bench-diff-home-"));
  builds.push({ name, bin, home, env: { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file" } });
};
add("lazy", process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy"));
if (process.env.LAZY_BENCH_OLD) add("old", process.env.LAZY_BENCH_OLD);

const root = mkdtempSync(join(tmpdir(), "lazy-bench-diff-"));
chmodSync(root, 0o755);
const env = builds[0]!.env;
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
  for (const b of builds) {
    trustToml(b.bin, root, b.env);
    const r = Bun.spawnSync([b.bin, "task", "add", "bench", "--code", "big"], { cwd: root, env: b.env, stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`${b.name}: task add: ${r.stderr}`);
  }
  sh("git checkout -qb lazy/big");
  for (let i = 0; i < files; i++)
    writeFileSync(join(root, "src", String(i % 50), `f${i}.txt`), `line one of ${i}\nline TWO\nline three\nadded\n`);
  sh("git commit -qam change && git checkout -q main");
  const base = sh("git merge-base main lazy/big").trim();
  const git = () => timeProcess(["git", "diff", "--stat", base, "lazy/big"], env, root);
  const lazy = (b: (typeof builds)[number]) => timeProcess([b.bin, "diff", "big", "--stat"], b.env, root);
  const newTip = () => sh("git update-ref refs/heads/lazy/big $(git commit-tree 'lazy/big^{tree}' -p lazy/big -m again)");
  for (const b of builds) lazy(b); // warm: daemons up, caches filled
  // Per build: its times and git's in the same steps, for three readings.
  const t = new Map(builds.map((b) => [b.name, { warm: [[], []], after: [[], []], once: [[], []] } as Record<string, number[][]>]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 && builds.length > 1 ? [...builds].reverse() : builds;
    for (const b of order) {
      const m = t.get(b.name)!;
      lazy(b); // the other build moved the tip (the repository is shared): read it once first
      m.warm![0]!.push(git());
      m.warm![1]!.push(lazy(b));
      // Cold: a new tip (same tree), so counts kept per commit pair do not apply. "After": read
      // a moment later, as a person reads a turn's diff (git is timed once a count ahead is done,
      // not beside it).
      newTip();
      Bun.sleepSync(AFTER_MS);
      m.after![0]!.push(git());
      m.after![1]!.push(lazy(b));
      newTip();
      m.once![1]!.push(lazy(b));
      m.once![0]!.push(git());
    }
  }
  console.log(`${files} files changed, ${rounds} rounds interleaved${builds.length > 1 ? ", builds in turn (order rotating)" : ""}`);
  for (const b of builds) {
    const m = t.get(b.name)!;
    for (const [what, label] of [
      ["warm", "warm (the same tip again)"],
      ["after", `cold, ${AFTER_MS} ms after the tip moved`],
      ["once", "cold, at once (asked the moment the tip moved)"],
    ] as const) {
      const [g, l] = m[what]!;
      console.log(
        `${b.name.padEnd(4)} ${label.padEnd(48)} git ${fmt(pct(g!, 50))}  lazy ${fmt(pct(l!, 50))}  p90 ${fmt(pct(l!, 90))}  ratio ${(pct(l!, 50) / pct(g!, 50)).toFixed(2)}×`,
      );
    }
  }
  console.log("target: ≤ 1.5× git diff --stat of the same range");
} finally {
  for (const b of builds) Bun.spawnSync([b.bin, "daemon", "stop"], { cwd: root, env: b.env });
  for (const d of [root, ...builds.map((b) => b.home)]) rmSync(d, { recursive: true, force: true });
}
