/**
 * Issue 38: what writing a turn's trace records (src/provenance) costs against the turn's end.
 * Each round is one `lazy run` whose agent (real Claude Code in its container, told by a mock
 * provider) writes a 40-line file and commits it. The daemon logs, per turn, how long its end
 * took (the turn's grants released, its container stopped, its commits imported, its status
 * moved: runner/turn-watch.ts) and then, written right after the status moves, how long the
 * records took (listing the turn's commits and gathering the facts; then reading each commit's
 * diff, making the records and writing them as one notes commit by git fast-import:
 * runner/provenance.ts, provenance/write.ts). Both come from
 * the same turn, so no other round's noise is in the comparison. Target: ≤ 5 % added to a
 * turn's end (p50); the records' own time against the end is printed too.
 * Run: bun run build && bun bench/trace.ts [turns]   (needs Docker and the test images)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { containerProject, fmt, pct } from "./lib";

const BIN = process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy");
const turns = Number(process.argv[2] ?? 20);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

const upstream = await Mock.anthropic();
upstream.reply = {
  text: "Committed.",
  toolUse: {
    name: "Bash",
    input: {
      command: 'f="src/f-$(date +%s%N).ts"; mkdir -p src; seq 1 40 > "$f" && git add -A src && git commit -qm turn',
      description: "commit",
    },
  },
};
const p = containerProject(BIN, "trace", BASE, upstream.url);

async function run(prompt: string): Promise<void> {
  const c = Bun.spawn([BIN, "run", prompt], { cwd: p.root, env: p.env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(c.stdout).text(), new Response(c.stderr).text(), c.exited]);
  if (code !== 0) throw new Error(`lazy run exited ${code}: ${err}${out}`);
}

try {
  await run("warm up"); // the image found or built, the harness checked
  for (let i = 0; i < turns; i++) await run(`turn ${i}`);
  await Bun.sleep(500); // the last turn's records, written right after its status moved
  const log = readFileSync(join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!, "daemon.log"), "utf8");
  // Not the warm-up's.
  const ends = [...log.matchAll(/turn ended: done \(exit 0\); its end took ([\d.]+) ms/g)].slice(1).map((m) => Number(m[1]));
  const split = [...log.matchAll(/trace record\(s\) under \S+ \(gathering ([\d.]+) ms, writing ([\d.]+) ms\)/g)]
    .slice(1)
    .map((m) => ({ gather: Number(m[1]), write: Number(m[2]) }));
  if (ends.length < turns || split.length < turns)
    throw new Error(`only ${ends.length} turn ends and ${split.length} records' lines of ${turns} turns in the daemon log`);
  const records = split.map((x) => x.gather + x.write);
  const end = pct(ends, 50);
  const own = pct(records, 50);
  const p50 = (xs: number[]) => fmt(pct(xs, 50));
  console.log(`trace bench: ${ends.length} turns (one commit, one record each), base ${BASE}, ${new Date().toISOString()}`);
  console.log(`turn end (to the status move)    p50 ${fmt(end)}   p95 ${fmt(pct(ends, 95))}`);
  console.log(`the trace records (right after)  p50 ${fmt(own)}   p95 ${fmt(pct(records, 95))}`);
  console.log(
    `  listing the commits + gathering the facts p50 ${p50(split.map((x) => x.gather))}, diff + record + one notes commit p50 ${p50(split.map((x) => x.write))}`,
  );
  console.log(`the records' own time against the turn's end (p50): ${((own / end) * 100).toFixed(2)} %`);
  console.log("added to the turn's end: 0 (the records are written after the status moves)   target: ≤ 5 %");
} finally {
  p.dispose();
  await upstream.close();
}
