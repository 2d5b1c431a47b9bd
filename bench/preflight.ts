/**
 * What the preflight (src/preflight) adds to a warm `lazy run`: two projects on the same image,
 * one whose daemon and CLI run with `LAZY_PREFLIGHT=off` (the checks skipped), the other as
 * shipped; both warmed by a first, unmeasured run (the image built or found, the harness check
 * remembered in preflight.json). Each round times, in rotating order, `lazy run` (add, start,
 * the turn against a mock that answers at once, the result) and `lazy task add` on each. The
 * figures are the medians over rounds and their differences. Target: ≤ 50 ms added to a warm run.
 * Run: bun run build && bun bench/preflight.ts [rounds]   (needs Docker and the test images)
 */
import { resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { containerProject, fmt, pct } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 10);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

const upstream = await Mock.anthropic();
upstream.reply = { text: "Done." };
const on = containerProject(BIN, "preflight-on", BASE, upstream.url);
const off = containerProject(BIN, "preflight-off", BASE, upstream.url, { LAZY_PREFLIGHT: "off" });

/** One command, awaited (the mock in this process must answer while it runs); its wall time. */
async function timed(p: typeof on, args: string[]): Promise<number> {
  const t0 = performance.now();
  const c = Bun.spawn([BIN, ...args], { cwd: p.root, env: p.env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(c.stdout).text(), new Response(c.stderr).text(), c.exited]);
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`lazy ${args.join(" ")} exited ${code}: ${err}${out}`);
  return ms;
}

try {
  for (const p of [on, off]) await timed(p, ["run", "warm up"]);
  const runs = { on: [] as number[], off: [] as number[] };
  const adds = { on: [] as number[], off: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
    for (const which of order) runs[which].push(await timed(which === "on" ? on : off, ["run", `sample ${i}`]));
    for (const which of order) adds[which].push(await timed(which === "on" ? on : off, ["task", "add", `added ${i}`]));
  }
  const med = (xs: number[]) => pct(xs, 50);
  console.log(`preflight bench: ${rounds} interleaved rounds, base ${BASE}, ${new Date().toISOString()}`);
  console.log(`lazy run (warm)    with ${fmt(med(runs.on))}   without ${fmt(med(runs.off))}   added ${fmt(med(runs.on) - med(runs.off))}`);
  console.log(`lazy task add      with ${fmt(med(adds.on))}   without ${fmt(med(adds.off))}   added ${fmt(med(adds.on) - med(adds.off))}`);
  const paired = runs.on.map((x, i) => x - runs.off[i]!);
  console.log(`lazy run, per round (with − without): median ${fmt(med(paired))}`);
} finally {
  on.dispose();
  off.dispose();
  await upstream.close();
}
