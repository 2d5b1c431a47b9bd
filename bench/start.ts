/**
 * `lazy start` to the agent's process running (image present), against the floor: `docker run`
 * of the same image running `true`. Each sample is a fresh task, so each includes its worktree
 * and container. "Running" is when the supervisor has spawned the harness (its started.json).
 * Targets: ≤ 1.5 s and ≤ 2× the floor.
 * With `--fence`, a second project with `[container] network = "open"` takes its samples in
 * turn with the default (allowlist: the fence's firewall rules and the egress proxy), for the
 * fence's cost on a launch (target ≤ 1.1× without).
 * Run: bun run build && bun bench/start.ts [samples] [--fence]   (needs Docker and the test images)
 */
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { containerProject, pct, fmt } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const samples = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 8);
const fence = process.argv.includes("--fence");
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

import * as Mock from "../test/helpers/providers";

// The agent only has to be running; the mock lets each turn end quickly so the task can close.
const upstream = await Mock.anthropic();
const projects = [containerProject(BIN, "start", BASE, upstream.url)];
if (fence) {
  const open = containerProject(BIN, "start-open", BASE, upstream.url);
  writeFileSync(
    join(open.root, "lazy.toml"),
    `[container]\nbase = "${BASE}"\nnetwork = "open"\n\n[proxy.upstreams]\nanthropic = "${upstream.url}"\n`,
  );
  projects.push(open);
}

try {
  let image = "";
  const states: string[] = [];
  for (const { home, sh } of projects) {
    // Warm: the image is built (or found) and the network made by a first, unmeasured start.
    sh([BIN, "task", "add", "warm up", "--code", "warm-up"]);
    sh([BIN, "start", "warm-up"]);
    const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
    states.push(state);
    image = JSON.parse(
      sh(["docker", "inspect", `lazy-${state.split("/").at(-1)}-${JSON.parse(sh([BIN, "task", "show", "warm-up", "--json"])).task.id}`]),
    )[0].Config.Image;
  }

  const lazy: number[][] = projects.map(() => []);
  const floor: number[] = [];
  for (let i = 0; i < samples; i++) {
    for (const [k, { sh }] of projects.entries()) {
      const t = JSON.parse(sh([BIN, "task", "add", `sample ${i}`, "--code", `sample-${i}`, "--json"]));
      const started = join(states[k]!, "tasks", t.id, "turns", "1", "started.json");
      const t0 = performance.now();
      sh([BIN, "start", `sample-${i}`]);
      const deadline = Date.now() + 60_000;
      while (!existsSync(started) && Date.now() < deadline) await Bun.sleep(5);
      if (!existsSync(started)) throw new Error(`sample ${i}: the agent never started`);
      const at = Date.parse(JSON.parse(readFileSync(started, "utf8")).at);
      lazy[k]!.push(at - (performance.timeOrigin + t0));
      for (const end = Date.now() + 60_000; Date.now() < end; await Bun.sleep(50))
        if (JSON.parse(sh([BIN, "task", "show", `sample-${i}`, "--json"])).task.status !== "running") break;
      sh([BIN, "close", `sample-${i}`]);
    }
    const f0 = performance.now();
    projects[0]!.sh(["docker", "run", "--rm", image, "true"]);
    floor.push(performance.now() - f0);
  }
  const [fenced, open] = lazy as [number[], number[] | undefined];
  console.log(`start bench: ${samples} samples, image ${image}, ${new Date().toISOString()}`);
  console.log(`lazy start → agent running   p50 ${fmt(pct(fenced, 50))}   p95 ${fmt(pct(fenced, 95))}`);
  console.log(`docker run --rm IMAGE true   p50 ${fmt(pct(floor, 50))}   p95 ${fmt(pct(floor, 95))}`);
  console.log(`ratio (p50): ${(pct(fenced, 50) / pct(floor, 50)).toFixed(2)}×   targets: ≤ 1.5 s and ≤ 2× the floor`);
  if (open) {
    console.log(`network = "open" (no fence)  p50 ${fmt(pct(open, 50))}   p95 ${fmt(pct(open, 95))}`);
    console.log(`fence cost (p50): ${(pct(fenced, 50) / pct(open, 50)).toFixed(2)}× without   target: ≤ 1.1×`);
  }
} finally {
  for (const p of projects) p.dispose();
  await upstream.close();
}
