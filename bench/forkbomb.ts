/**
 * The daemon's answers while a container fork-bombs at its pids limit (issue 26's bound; the
 * test test/attacks/containers.test.ts asserts only the behaviour: the limit holds, the daemon
 * answers). Measured: `GET /api/tasks` (what `lazy task list` asks, 10 tasks) and the whole
 * `lazy task list` process, 15 samples each, with and without a container of the test image
 * forking at lazy's default limits (pids 1024, all cores but half of one, 1 GiB here). Rounds
 * interleaved (which comes first alternates); per round the ratio of the medians, bomb over
 * quiet; the median of the rounds' ratios is the figure.
 * Run: bun run build && bun bench/forkbomb.ts [rounds]
 */
import { existsSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import { resolve } from "node:path";
import { pct, proxyProject } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const IMAGE = "lazy-test/debian:bookworm";
const rounds = Number(process.argv[2] ?? 5);
const SAMPLES = 15;
const name = `lazy-bench-forkbomb-${process.pid}`;

const docker = (...args: string[]) => {
  const r = Bun.spawnSync(["docker", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`docker ${args[0]}: ${r.stderr}`);
  return r.stdout.toString().trim();
};

/** A container forking until its pids limit (its PID 1 a sleep that never forks, so it stays up). */
async function bomb(): Promise<void> {
  const cpusLimit = String(Math.max(0.5, cpus().length - 0.5));
  const id = docker(
    "run",
    "-d",
    "--rm",
    "--name",
    name,
    "--pids-limit",
    "1024",
    "--memory",
    "1g",
    "--memory-swap",
    "1g",
    "--cpus",
    cpusLimit,
    IMAGE,
    "bash",
    "-c",
    "(sleep 1; :(){ :|:& };:) & exec sleep 600",
  );
  const file = [
    `/sys/fs/cgroup/pids/docker/${id}/pids.current`,
    `/sys/fs/cgroup/system.slice/docker-${id}.scope/pids.current`,
    `/sys/fs/cgroup/docker/${id}/pids.current`,
  ].find(existsSync);
  if (!file) throw new Error("no pids cgroup file for the bomb's container");
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(100))
    if (Number(readFileSync(file, "utf8")) >= 900) return;
  throw new Error("the bomb did not reach 900 processes in 30 s");
}

const p = await proxyProject(BIN, "http://127.0.0.1:9", "", "forkbomb");
try {
  for (let i = 0; i < 10; i++) p.lazy(["task", "add", `task ${i}`, "--code", `t${i}`]);
  /** Median ms of the API call and of the CLI process, SAMPLES each. */
  const sample = async () => {
    const api: number[] = [];
    const cli: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      let t = performance.now();
      const r = await fetch(`${p.api}/api/tasks`, { headers: { authorization: `Bearer ${p.token}` } });
      if (r.status !== 200) throw new Error(`GET /api/tasks: ${r.status}`);
      await r.arrayBuffer();
      api.push(performance.now() - t);
      t = performance.now();
      p.lazy(["task", "list"]);
      cli.push(performance.now() - t);
      await Bun.sleep(50);
    }
    return { api: pct(api, 50), cli: pct(cli, 50) };
  };
  const rows: { quiet: { api: number; cli: number }; bombed: { api: number; cli: number } }[] = [];
  for (let r = 0; r < rounds; r++) {
    const run = async (withBomb: boolean) => {
      if (!withBomb) return sample();
      await bomb();
      try {
        return await sample();
      } finally {
        Bun.spawnSync(["docker", "rm", "-f", name], { stdout: "ignore", stderr: "ignore" });
      }
    };
    const first = r % 2 === 0;
    const a = await run(first);
    const b = await run(!first);
    rows.push(first ? { bombed: a, quiet: b } : { quiet: a, bombed: b });
    const last = rows.at(-1)!;
    console.log(
      `round ${r + 1}: API ${last.quiet.api.toFixed(1)} → ${last.bombed.api.toFixed(1)} ms, CLI ${last.quiet.cli.toFixed(1)} → ${last.bombed.cli.toFixed(1)} ms`,
    );
  }
  const med = (xs: number[]) => pct(xs, 50);
  console.log(`rounds: ${rounds} × ${SAMPLES} samples, ${new Date().toISOString()}`);
  console.log(
    `GET /api/tasks p50: quiet ${med(rows.map((x) => x.quiet.api)).toFixed(1)} ms, bomb ${med(rows.map((x) => x.bombed.api)).toFixed(1)} ms, ratio ${med(rows.map((x) => x.bombed.api / x.quiet.api)).toFixed(2)}×`,
  );
  console.log(
    `lazy task list p50: quiet ${med(rows.map((x) => x.quiet.cli)).toFixed(1)} ms, bomb ${med(rows.map((x) => x.bombed.cli)).toFixed(1)} ms, ratio ${med(rows.map((x) => x.bombed.cli / x.quiet.cli)).toFixed(2)}×`,
  );
} finally {
  Bun.spawnSync(["docker", "rm", "-f", name], { stdout: "ignore", stderr: "ignore" });
  p.stop();
}
