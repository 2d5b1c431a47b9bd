/**
 * `lazy start` to the agent's process running (image present), against the floor: `docker run`
 * of the same image running `true`. Each sample is a fresh task, so each includes its worktree
 * and container. "Running" is when the supervisor has spawned the harness (its started.json).
 * Targets: ≤ 1.5 s and ≤ 2× the floor. Samples alternate the boundary's defaults (guarded:
 * [container.limits] on, network = "allowlist": the fence's firewall rules and the egress proxy)
 * and none of it (bare: limits off, network = "open"), for "a turn's launch with limits and the
 * fence ≤ 1.1× without (same run)". Each sample also times its next turn (`lazy send` → agent
 * running): turns stop their container, the next starts it.
 * Run: bun run build && bun bench/start.ts [samples]   (needs Docker and the test images)
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { containerProject, fmt, pct, trustToml } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const samples = Number(process.argv[2] ?? 8);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

import * as Mock from "../test/helpers/providers";

// The agent only has to be running; the mock lets each turn end quickly so the task can close.
const upstream = await Mock.anthropic();
const { root, home, env, sh, dispose } = containerProject(BIN, "start", BASE, upstream.url);

try {
  // Warm: the image is built (or found) and the network made by a first, unmeasured start.
  sh([BIN, "task", "add", "warm up", "--code", "warm-up"]);
  sh([BIN, "start", "warm-up"]);
  const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
  const image = JSON.parse(
    sh(["docker", "inspect", `lazy-${state.split("/").at(-1)}-${JSON.parse(sh([BIN, "task", "show", "warm-up", "--json"])).task.id}`]),
  )[0].Config.Image;

  const lazy: number[] = [];
  const floor: number[] = [];
  const next: number[] = [];
  const byVariant: Record<"guarded" | "bare", number[]> = { guarded: [], bare: [] };
  const toml = readFileSync(join(root, "lazy.toml"), "utf8");
  /** The agent's process started for turn `n` of sample i, in ms since t0 (performance.now()). */
  const running = async (i: number, id: string, n: number, t0: number) => {
    const started = join(state, "tasks", id, "turns", String(n), "started.json");
    const deadline = Date.now() + 60_000;
    while (!existsSync(started) && Date.now() < deadline) await Bun.sleep(5);
    if (!existsSync(started)) throw new Error(`sample ${i}: the agent never started turn ${n}`);
    return Date.parse(JSON.parse(readFileSync(started, "utf8")).at) - (performance.timeOrigin + t0);
  };
  const ended = async (i: number) => {
    for (const end = Date.now() + 60_000; Date.now() < end; await Bun.sleep(50))
      if (JSON.parse(sh([BIN, "task", "show", `sample-${i}`, "--json"])).task.status !== "running") return;
  };
  for (let i = 0; i < samples; i++) {
    const variant = i % 2 === 0 ? "guarded" : "bare";
    writeFileSync(
      join(root, "lazy.toml"),
      variant === "guarded"
        ? toml
        : toml.replace("[container]\n", '[container]\nnetwork = "open"\n') +
            '\n[container.limits]\npids = "off"\nmemory = "off"\ncpus = "off"\n',
    );
    // Approved as its person would; the next API request reloads it (daemon/api.ts).
    trustToml(BIN, root, env);
    const t = JSON.parse(sh([BIN, "task", "add", `sample ${i}`, "--code", `sample-${i}`, "--json"]));
    const t0 = performance.now();
    sh([BIN, "start", `sample-${i}`]);
    const ms = await running(i, t.id, 1, t0);
    lazy.push(ms);
    byVariant[variant].push(ms);
    const f0 = performance.now();
    sh(["docker", "run", "--rm", image, "true"]);
    floor.push(performance.now() - f0);
    await ended(i);
    const s0 = performance.now();
    sh([BIN, "send", `sample-${i}`, "again"]);
    next.push(await running(i, t.id, 2, s0));
    await ended(i);
    sh([BIN, "close", `sample-${i}`]);
  }
  console.log(`start bench: ${samples} samples, image ${image}, ${new Date().toISOString()}`);
  console.log(`lazy start → agent running   p50 ${fmt(pct(lazy, 50))}   p95 ${fmt(pct(lazy, 95))}`);
  console.log(`docker run --rm IMAGE true   p50 ${fmt(pct(floor, 50))}   p95 ${fmt(pct(floor, 95))}`);
  console.log(`ratio (p50): ${(pct(lazy, 50) / pct(floor, 50)).toFixed(2)}×   targets: ≤ 1.5 s and ≤ 2× the floor`);
  console.log(
    `limits and fence  p50 ${fmt(pct(byVariant.guarded, 50))}   without p50 ${fmt(pct(byVariant.bare, 50))}   ratio ${(pct(byVariant.guarded, 50) / pct(byVariant.bare, 50)).toFixed(2)}×   target ≤ 1.1×`,
  );
  console.log(`lazy send → agent running (the stopped container started again)   p50 ${fmt(pct(next, 50))}   p95 ${fmt(pct(next, 95))}`);
} finally {
  dispose();
  await upstream.close();
}
