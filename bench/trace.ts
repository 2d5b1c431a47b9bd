/**
 * Issue 38: what writing a turn's trace records (src/provenance) adds to the turn's end. Each
 * round is one `lazy run` whose agent (real Claude Code in its container, told by a mock
 * provider) writes a 40-line file and commits it. The daemon logs, per turn, how long its end
 * took (the turn's grants released, its container stopped, its commits imported, the records
 * written, its status moved) and how much of it the trace records were (runner/turn-watch.ts):
 * both from the same turn, so no other round's noise is in the difference. The figure: the
 * records' p50 against the p50 of the end without them. Target: ≤ 5 %.
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
  const log = readFileSync(join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!, "daemon.log"), "utf8");
  const ends = [...log.matchAll(/turn ended: done \(exit 0\); its end took ([\d.]+) ms, ([\d.]+) of them the trace records/g)]
    .slice(1) // the warm-up's
    .map((m) => ({ end: Number(m[1]), trace: Number(m[2]) }));
  if (ends.length < turns) throw new Error(`only ${ends.length} of ${turns} turns ended done with a timing in the daemon log`);
  const records = log.match(/1 trace record\(s\) under refs\/notes\/agent-trace/g)?.length ?? 0;
  const trace = pct(
    ends.map((e) => e.trace),
    50,
  );
  const without = pct(
    ends.map((e) => e.end - e.trace),
    50,
  );
  console.log(`trace bench: ${ends.length} turns (one commit each, ${records} records written), base ${BASE}, ${new Date().toISOString()}`);
  console.log(
    `turn end without the records  p50 ${fmt(without)}   p95 ${fmt(
      pct(
        ends.map((e) => e.end - e.trace),
        95,
      ),
    )}`,
  );
  console.log(
    `the trace records             p50 ${fmt(trace)}   p95 ${fmt(
      pct(
        ends.map((e) => e.trace),
        95,
      ),
    )}`,
  );
  const split = [...log.matchAll(/trace record\(s\) under \S+ \(gathering ([\d.]+) ms, writing ([\d.]+) ms\)/g)].slice(1);
  console.log(
    `  of which gathering the facts p50 ${fmt(
      pct(
        split.map((m) => Number(m[1])),
        50,
      ),
    )}, writing the notes p50 ${fmt(
      pct(
        split.map((m) => Number(m[2])),
        50,
      ),
    )}`,
  );
  console.log(`added to the turn's end (p50): ${((trace / without) * 100).toFixed(2)} %   target: ≤ 5 %`);
} finally {
  p.dispose();
  await upstream.close();
}
