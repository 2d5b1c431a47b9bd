/**
 * Two builds of lazy side by side, issue 19's proxy target: "the proxy's req/s with pause and
 * budget accounting on stays within 5 % of today's (same run, same bench)".
 *
 * OLD and NEW each run a daemon (own project and LAZY_HOME) against one mock upstream (the
 * very one bench/proxy.ts uses), each through an agent grant of a task of its own; NEW's
 * lazy.toml turns on [usage_pause] and [budget] (OLD's schema may not know them). nginx (as
 * many workers as lazy has proxy threads) and the direct path are measured too. wrk at 50
 * connections, the four in turn, the order rotating from round to round (this VM's speed
 * drifts, and whoever runs right after another pays for it); every figure is a median over
 * the rounds, ratios per round first. CPU per request from /proc (all of a process' threads).
 * Run: bun run build && bun bench/ab.ts OLD_BINARY [seconds-per-run] [rounds]
 *   e.g. git worktree add /tmp/old 6666391 && (cd /tmp/old && bun install && bun run build)
 *        bun bench/ab.ts /tmp/old/dist/lazy 4 9
 * NEW is this worktree's dist/lazy; LAZY_AB_NEW_TOML replaces NEW's extra lazy.toml lines;
 * LAZY_AB_TASKS=N adds N tasks (rows only) to both stores first, as a project with history has.
 * Needs wrk and nginx (Debian: wrk nginx-light). Only loopback is used.
 */

import { Database } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { threadCount } from "../src/proxy/listen/shared-port";
import { BENCH_BODY as BODY, pct, proxyProject, runWrk, startNginx } from "./lib";

const NEW = resolve(import.meta.dir, "../dist/lazy");
const OLD = resolve(process.argv[2] ?? "");
if (!process.argv[2]) throw new Error("usage: bun bench/ab.ts OLD_BINARY [seconds-per-run] [rounds]");
const secs = Number(process.argv[3] ?? 4);
const rounds = Number(process.argv[4] ?? 9);
const NEW_TOML = process.env.LAZY_AB_NEW_TOML ?? "\n[usage_pause]\nthreshold = 90\n\n[budget]\nper_day_tokens = 1000000000\n";

const upstreamProc = Bun.spawn([process.execPath, resolve(import.meta.dir, "proxy.ts"), "upstream"], { stdout: "pipe", stderr: "inherit" });
const upPort = Number(new TextDecoder().decode((await upstreamProc.stdout.getReader().read()).value).trim());
const up = `http://127.0.0.1:${upPort}`;
const dir = mkdtempSync(join(tmpdir(), "lazy-bench-ab-"));
const projects: Awaited<ReturnType<typeof proxyProject>>[] = [];
let nginx: ReturnType<typeof Bun.spawn> | undefined;
try {
  const old = await proxyProject(OLD, up, "", "ab-old");
  projects.push(old);
  const neu = await proxyProject(NEW, up, NEW_TOML, "ab-new");
  projects.push(neu);
  // A store with history: N more tasks (rows only; their ids random hex, as lazy makes them).
  const extra = Number(process.env.LAZY_AB_TASKS ?? 0);
  if (extra)
    for (const p of [old, neu]) {
      const db = new Database(join(p.state, "store.db"));
      db.exec("PRAGMA busy_timeout = 5000");
      const add = db.query(
        "INSERT OR IGNORE INTO tasks (id, code, title, prompt, status, profile, created_at, updated_at) VALUES (?, NULL, 'history', 'p', 'done', 'claude', ?, ?)",
      );
      db.transaction(() => {
        for (let i = 0; i < extra; i++) add.run(randomBytes(4).toString("hex"), Date.now() - i * 60_000, Date.now());
      })();
      db.close();
    }
  const version = (bin: string) => `${Bun.spawnSync([bin, "--version"]).stdout.toString().trim()} (${bin})`;

  // nginx as a plain reverse proxy, keep-alive upstream, as bench/proxy.ts runs it.
  const workers = threadCount(process.env as Record<string, string>);
  const ng = await startNginx(dir, upPort, workers);
  const nginxPort = ng.port;
  nginx = ng.proc;
  const nginxWorkers = Bun.spawnSync(["pgrep", "-P", String(nginx.pid)])
    .stdout.toString()
    .trim()
    .split("\n")
    .map(Number);

  // One wrk script per target: each lazy has its own placeholder (an agent grant of its task).
  const script = (name: string, key?: string) => {
    const f = join(dir, `${name}.lua`);
    writeFileSync(
      f,
      `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["content-type"] = "application/json"\n${key ? `wrk.headers["x-api-key"] = "${key}"\n` : ""}`,
    );
    return f;
  };
  type Target = { name: string; url: string; lua: string; pids: number[] };
  const targets: Target[] = [{ name: "direct", url: up, lua: script("direct"), pids: [] }];
  for (const [name, p] of [
    ["old", old],
    ["new", neu],
  ] as const) {
    p.lazy(["task", "add", `ab bench ${name}`, "--code", `ab-${name}`]);
    const g = await p.grant({ role: "agent", task: `ab-${name}` });
    targets.push({ name, url: g.proxyUrl, lua: script(name, g.placeholder), pids: [p.pid] });
  }
  targets.push({ name: "nginx", url: `http://127.0.0.1:${nginxPort}`, lua: script("nginx"), pids: nginxWorkers });

  const cpuUs = (pid: number, tid?: string) => {
    const stat = readFileSync(tid ? `/proc/${pid}/task/${tid}/stat` : `/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100; // utime + stime, all threads, in ticks of 1/100 s
  };
  const cpuOf = (pids: number[]) => pids.reduce((sum, p) => sum + cpuUs(p), 0);
  /** A daemon's CPU by thread name (threads of one name summed), to see where a difference sits. */
  const threadsOf = (pid: number) => {
    const out: Record<string, number> = {};
    let workers = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`).sort((a, b) => Number(a) - Number(b))) {
      try {
        let name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
        if (name === "Worker") name = `Worker${++workers}`; // Bun's worker threads, in the order they started
        out[name] = (out[name] ?? 0) + cpuUs(pid, tid);
      } catch {} // a thread that ended meanwhile
    }
    return out;
  };
  const wrk = async (t: Target, s = secs) => {
    const before = cpuOf(t.pids);
    const threadsBefore = t.name === "old" || t.name === "new" ? threadsOf(t.pids[0]!) : {};
    const r = await runWrk(["-t", "2", "-c", "50", "-d", `${s}s`, "-s", t.lua, `${t.url}/v1/messages`], t.name);
    const n = r.requests;
    const threads: Record<string, number> = {};
    if (t.name === "old" || t.name === "new")
      for (const [k, v] of Object.entries(threadsOf(t.pids[0]!))) threads[k] = (v - (threadsBefore[k] ?? 0)) / n;
    return {
      rps: r.rps,
      cpu: t.pids.length ? (cpuOf(t.pids) - before) / n : NaN,
      threads,
    };
  };

  for (const t of targets) await wrk(t, 2); // warm up (the JIT, both pools)
  const runs: Record<string, { rps: number; cpu: number; threads: Record<string, number> }[]> = Object.fromEntries(
    targets.map((t) => [t.name, []]),
  );
  const ratio = { newOld: [] as number[], newNginx: [] as number[], oldNginx: [] as number[], cpuNewOld: [] as number[] };
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(i + k) % targets.length]!;
      runs[t.name]!.push(await wrk(t));
    }
    const last = (n: string) => runs[n]!.at(-1)!;
    ratio.newOld.push(last("new").rps / last("old").rps);
    ratio.newNginx.push(last("new").rps / last("nginx").rps);
    ratio.oldNginx.push(last("old").rps / last("nginx").rps);
    ratio.cpuNewOld.push(last("new").cpu / last("old").cpu);
  }

  // NEW's accounting really ran: its budget counters hold the requests it proxied.
  const counted = (JSON.parse(neu.lazy(["stats", "budget", "--json"])) as { today: { requests: number } }).today.requests;
  const med = (xs: number[]) => pct(xs, 50);
  const list = (xs: number[]) => xs.map((x) => x.toFixed(2)).join(" ");
  console.log(
    `A/B proxy bench, ${secs}s per run, ${rounds} rounds (order rotating), 50 connections, proxy threads / nginx workers: ${workers}, ${new Date().toISOString()}`,
  );
  if (extra) console.log(`both stores hold ${extra} more tasks (LAZY_AB_TASKS)`);
  console.log(`OLD: ${version(OLD)}\nNEW: ${version(NEW)}, lazy.toml adds: ${NEW_TOML.trim().replace(/\n+/g, " ")}`);
  console.log(`NEW's budget counters: ${counted} requests today (its usage_days); OLD has none`);
  console.log(
    `req/s (median): direct ${med(runs.direct!.map((r) => r.rps)).toFixed(0)}, old ${med(runs.old!.map((r) => r.rps)).toFixed(0)}, new ${med(runs.new!.map((r) => r.rps)).toFixed(0)}, nginx ${med(runs.nginx!.map((r) => r.rps)).toFixed(0)}`,
  );
  console.log(`NEW/OLD req/s: median ${med(ratio.newOld).toFixed(3)}, per round ${list(ratio.newOld)}   (target: ≥ 0.95)`);
  console.log(
    `NEW/nginx: median ${med(ratio.newNginx).toFixed(3)}, per round ${list(ratio.newNginx)}; OLD/nginx: median ${med(ratio.oldNginx).toFixed(3)}   (floor: ≥ 0.60)`,
  );
  console.log(
    `CPU µs per request (median, all threads): old ${med(runs.old!.map((r) => r.cpu)).toFixed(1)}, new ${med(runs.new!.map((r) => r.cpu)).toFixed(1)}, nginx ${med(runs.nginx!.map((r) => r.cpu)).toFixed(1)}; NEW/OLD per round ${list(ratio.cpuNewOld)}, median ${med(ratio.cpuNewOld).toFixed(3)}`,
  );
  const names = [...new Set([...runs.old!, ...runs.new!].flatMap((r) => Object.keys(r.threads)))].sort();
  const by = (which: string, name: string) => med(runs[which]!.map((r) => r.threads[name] ?? 0));
  console.log(
    `CPU µs per request by thread name (median), old → new: ${names
      .filter((n) => by("old", n) + by("new", n) >= 0.5)
      .map((n) => `${n} ${by("old", n).toFixed(1)} → ${by("new", n).toFixed(1)}`)
      .join("; ")}`,
  );
} finally {
  nginx?.kill();
  for (const p of projects) p.stop();
  upstreamProc.kill();
  rmSync(dir, { recursive: true, force: true });
}
