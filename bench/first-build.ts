/**
 * The first build of lazy's default image for one harness (Claude Code) against the three it
 * installed before issue 37, each from a bare Debian base with no cache (`--no-cache`): its time,
 * each step's share of it, and the image's size (`docker image inspect`). The Dockerfile is the
 * one lazy builds (Image.plan, with this host's CA steps as Image.withHostNetwork adds them), built by
 * Docker's classic builder on the host's network (a bench has no fenced project network).
 * `bun bench/first-build.ts [sets…]`, a set being harnesses joined by commas (default:
 * `claude claude,codex,pi`). Builds minutes each: run it on a quiet machine.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Image } from "../src/containers";
import { HostNet } from "../src/network";

const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/debian:bookworm";
const sets = process.argv.slice(2).length ? process.argv.slice(2) : ["claude", "claude,codex,pi"];

interface Result {
  set: string;
  tag: string;
  ms: number;
  mb: number;
  steps: { step: string; ms: number }[];
  modules: string;
}

async function build(set: string): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), "lazy-bench-first-"));
  const host = HostNet.read();
  const plan = Image.withHostNetwork(Image.plan(dir, { base: BASE }, set.split(",")), host);
  if (plan.kind !== "build") throw new Error("not a build");
  const tag = `lazy-bench/first-build:${set.replaceAll(",", "-")}`;
  writeFileSync(join(dir, "Dockerfile"), plan.dockerfile);
  if (host.ca) writeFileSync(join(dir, HostNet.CA_CONTEXT_NAME), host.ca.pem);
  const args = Object.entries(plan.buildArgs).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]);
  const started = performance.now();
  const proc = Bun.spawn(["docker", "build", "--no-cache", "--network", "host", "-t", tag, ...args, dir], {
    env: { ...process.env, DOCKER_BUILDKIT: "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const steps: { step: string; at: number }[] = [];
  let tail = "";
  const decoder = new TextDecoder();
  for await (const chunk of proc.stdout) {
    const text = tail + decoder.decode(chunk);
    const lines = text.split("\n");
    tail = lines.pop() ?? "";
    for (const l of lines) if (/^Step \d+\/\d+ : /.test(l)) steps.push({ step: l.slice(0, 70), at: performance.now() });
  }
  const code = await proc.exited;
  const ms = performance.now() - started;
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`docker build of ${set} failed: ${await new Response(proc.stderr).text()}`);
  const size = Bun.spawnSync(["docker", "image", "inspect", "-f", "{{.Size}}", tag]).stdout.toString().trim();
  const modules = Bun.spawnSync([
    "docker",
    "run",
    "--rm",
    "--entrypoint",
    "sh",
    tag,
    "-c",
    "du -sm /usr/local/lib/node_modules/* /usr/lib/node_modules 2>/dev/null | sort -rn | head -8",
  ])
    .stdout.toString()
    .trim();
  return {
    set,
    tag,
    ms,
    mb: Number(size) / 1e6,
    steps: steps.map((s, i) => ({ step: s.step, ms: (steps[i + 1]?.at ?? started + ms) - s.at })),
    modules,
  };
}

const results: Result[] = [];
for (const set of sets) {
  const r = await build(set);
  results.push(r);
  console.log(`\n${r.set}: ${(r.ms / 1000).toFixed(1)} s, ${r.mb.toFixed(0)} MB (${r.tag})`);
  for (const s of r.steps) if (s.ms > 500) console.log(`  ${(s.ms / 1000).toFixed(1).padStart(6)} s  ${s.step}`);
  console.log(`  node_modules (MB):\n${r.modules.replace(/^/gm, "    ")}`);
}
if (results.length === 2) {
  const [a, b] = results as [Result, Result];
  console.log(`\n${a.set} / ${b.set}: time ${(a.ms / b.ms).toFixed(2)}×, size ${(a.mb / b.mb).toFixed(2)}×`);
}
