/**
 * What a TAB on a task code costs (issue 30, item 7: completion of task codes). Interleaved in
 * each round, on a project with 200 tasks and its daemon up: `lazy __complete tasks start` (what
 * the scripts run), a whole bash TAB (`_lazy` from `lazy completion bash` on `lazy start `), and
 * the baselines `lazy task list --json` (the other way a script could get the codes) and
 * `lazy --version` (the process floor); then `lazy __complete` with the daemon stopped (it must
 * not start one). Each figure is the median over rounds.
 * Run: bun run build && bun bench/complete.ts [rounds]
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fmt, pct, timeProcess } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 30);
const root = mkdtempSync(join(tmpdir(), "lazy-bench-complete-"));
const home = mkdtempSync(join(tmpdir(), "lazy-bench-complete-home-"));
const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, PATH: `${dirname(BIN)}:${process.env.PATH}` };
Bun.spawnSync(["git", "init", "-q", root]);

const lazy = (...args: string[]) => timeProcess([BIN, ...args], env, root);
try {
  lazy("daemon", "start");
  // 200 tasks through the API in one go would be faster; the CLI keeps the bench plain.
  for (let i = 0; i < 200; i++) lazy("task", "add", `bench task ${i}`, "--code", `bench-${i}`);
  const script = join(home, "lazy.bash");
  writeFileSync(script, Bun.spawnSync([BIN, "completion", "bash"], { env, cwd: root }).stdout);
  const tab = ["bash", "-c", `source ${script}; COMP_WORDS=(lazy start ''); COMP_CWORD=2; _lazy; [ "\${#COMPREPLY[@]}" = 200 ] || exit 9`];
  const bashFloor = ["bash", "-c", `source ${script}`];

  const m: Record<string, number[]> = { complete: [], tab: [], bashFloor: [], list: [], version: [] };
  for (let i = 0; i < 3; i++) lazy("__complete", "tasks", "start"); // warm the page cache
  for (let r = 0; r < rounds; r++) {
    const steps: [string, () => number][] = [
      ["complete", () => lazy("__complete", "tasks", "start")],
      ["tab", () => timeProcess(tab, env, root)],
      ["bashFloor", () => timeProcess(bashFloor, env, root)],
      ["list", () => lazy("task", "list", "--json")],
      ["version", () => lazy("--version")],
    ];
    // The order rotates each round, so drift in the VM's speed spreads over all of them.
    for (let k = 0; k < steps.length; k++) {
      const [name, run] = steps[(k + r) % steps.length]!;
      m[name]!.push(run());
    }
  }
  lazy("daemon", "stop");
  const down: number[] = [];
  for (let r = 0; r < Math.max(5, Math.floor(rounds / 3)); r++) down.push(lazy("__complete", "tasks", "start"));
  const started = readdirSync(join(home, "daemon")).some((d) => readdirSync(join(home, "daemon", d)).includes("daemon.json"));

  const med = (xs: number[]) => pct(xs, 50);
  console.log(`rounds: ${rounds}, 200 tasks`);
  console.log(`lazy __complete tasks start, daemon up   p50 ${fmt(med(m.complete!))}  p95 ${fmt(pct(m.complete!, 95))}`);
  console.log(
    `bash TAB (lazy start <TAB>), whole      p50 ${fmt(med(m.tab!))}  (bash sourcing the script alone: ${fmt(med(m.bashFloor!))})`,
  );
  console.log(
    `lazy task list --json (baseline)         p50 ${fmt(med(m.list!))}  → __complete is ${(med(m.complete!) / med(m.list!)).toFixed(2)}× of it`,
  );
  console.log(`lazy --version (process floor)          p50 ${fmt(med(m.version!))}`);
  console.log(`lazy __complete, no daemon              p50 ${fmt(med(down))}  (a daemon was ${started ? "STARTED" : "not started"})`);
} finally {
  Bun.spawnSync([BIN, "daemon", "stop"], { env, cwd: root });
  rmSync(root, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
