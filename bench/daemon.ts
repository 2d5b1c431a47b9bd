/**
 * Issue "the spine" targets, measured against a baseline in the same run:
 *  - `lazy task list` with the daemon up vs the same API request made by curl (the ratio is
 *    the CLI's own cost); target ≤ 60 ms p50.
 *  - daemon cold start to ready (`lazy daemon start` on a stopped project) vs `lazy --version`
 *    (the process floor); target ≤ 400 ms.
 * Run: bun run build && bun bench/daemon.ts [runs]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fmt, pct, timeProcess } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const runs = Number(process.argv[2] ?? 40);
const root = mkdtempSync(join(tmpdir(), "lazy-bench-"));
const home = mkdtempSync(join(tmpdir(), "lazy-bench-home-"));
const env = { ...(process.env as Record<string, string>), LAZY_HOME: home };
Bun.spawnSync(["git", "init", "-q", root]);

const lazy = (...args: string[]) => timeProcess([BIN, ...args], env, root);
try {
  lazy("daemon", "start");
  for (let i = 0; i < 20; i++) lazy("task", "add", `bench task ${i}`);
  const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
  const rt = JSON.parse(readFileSync(join(state, "daemon.json"), "utf8"));
  const token = readFileSync(join(state, "token"), "utf8").trim();
  const url = `http://127.0.0.1:${rt.api.port}/api/tasks`;

  const cli: number[] = [];
  const curl: number[] = [];
  for (let i = 0; i < 3; i++) lazy("task", "list"); // warm the page cache
  for (let i = 0; i < runs; i++) {
    cli.push(lazy("task", "list"));
    curl.push(timeProcess(["curl", "-sf", "-H", `authorization: Bearer ${token}`, url], env));
  }

  const cold: number[] = [];
  const floor: number[] = [];
  for (let i = 0; i < Math.max(5, Math.floor(runs / 4)); i++) {
    lazy("daemon", "stop");
    cold.push(lazy("daemon", "start"));
    floor.push(lazy("--version"));
  }

  const rows = [
    ["lazy task list (daemon up)", pct(cli, 50), pct(cli, 95)],
    ["curl GET /api/tasks (baseline)", pct(curl, 50), pct(curl, 95)],
    ["daemon cold start to ready", pct(cold, 50), pct(cold, 95)],
    ["lazy --version (process floor)", pct(floor, 50), pct(floor, 95)],
  ] as const;
  console.log(`runs: ${runs} (cold start: ${cold.length}), ${new Date().toISOString()}`);
  for (const [name, p50, p95] of rows) console.log(`${name.padEnd(34)} p50 ${fmt(p50).padStart(9)}   p95 ${fmt(p95).padStart(9)}`);
  console.log(`task list / curl ratio (p50): ${(pct(cli, 50) / pct(curl, 50)).toFixed(2)}×   target: task list ≤ 60 ms p50`);
  console.log(`cold start / --version ratio (p50): ${(pct(cold, 50) / pct(floor, 50)).toFixed(2)}×   target: cold start ≤ 400 ms`);
} finally {
  Bun.spawnSync([BIN, "daemon", "stop"], { env, cwd: root });
  rmSync(root, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
