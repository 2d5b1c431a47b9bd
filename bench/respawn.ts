/**
 * Issue 28: a daemon that dies (kill -9) answers again within 2 s p50, with no human action.
 * Measured: kill -9 of the daemon to lazy's proxy answering again on its loopback port (its own
 * 401 to a request with no credential; the keeper holds the port meanwhile and closes each
 * connection). Baseline in the same run, interleaved round by round: a cold `lazy daemon start`
 * of the same project to its proxy answering (what a person typing a command got before).
 * Run: bun run build && bun bench/respawn.ts [rounds]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fmt, pct } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 15);
const root = mkdtempSync(join(tmpdir(), "lazy-bench-respawn-"));
const home = mkdtempSync(join(tmpdir(), "lazy-bench-respawn-home-"));
const env = { ...(process.env as Record<string, string>), LAZY_HOME: home };
Bun.spawnSync(["git", "init", "-q", root]);
const lazy = (...args: string[]) => Bun.spawnSync([BIN, ...args], { env, cwd: root, stdout: "ignore", stderr: "ignore" }).exitCode;
const state = () => join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
const record = () => JSON.parse(readFileSync(join(state(), "daemon.json"), "utf8")) as { pid: number; proxy: { port: number } };

/** ms from t0 until the proxy at `port` gives its own 401 (bounded: 20 s). */
async function answers(port: number, t0: number): Promise<number> {
  for (const deadline = t0 + 20_000; performance.now() < deadline; await Bun.sleep(5)) {
    const ok = await fetch(`http://127.0.0.1:${port}/v1/messages`, { method: "POST", body: "{}", signal: AbortSignal.timeout(500) }).then(
      (r) => r.status === 401,
      () => false,
    );
    if (ok) return performance.now() - t0;
  }
  throw new Error("the proxy did not answer within 20 s");
}

const back: number[] = [];
const cold: number[] = [];
try {
  lazy("daemon", "start");
  for (let i = 0; i < rounds; i++) {
    const before = record();
    // A fresh keeper each round (stop + start below), so no round counts toward the crash bound.
    process.kill(before.pid, "SIGKILL");
    back.push(await answers(before.proxy.port, performance.now()));
    lazy("daemon", "stop");
    const t0 = performance.now();
    lazy("daemon", "start");
    cold.push(await answers(record().proxy.port, t0));
  }
  console.log(`rounds: ${rounds}, ${new Date().toISOString()}`);
  console.log(`kill -9 to the proxy answering again   p50 ${fmt(pct(back, 50)).padStart(9)}   p95 ${fmt(pct(back, 95)).padStart(9)}`);
  console.log(`lazy daemon start to the proxy answering p50 ${fmt(pct(cold, 50)).padStart(9)}   p95 ${fmt(pct(cold, 95)).padStart(9)}`);
  console.log(`ratio (p50): ${(pct(back, 50) / pct(cold, 50)).toFixed(2)}×   target: back ≤ 2000 ms p50`);
} finally {
  lazy("daemon", "stop");
  rmSync(root, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
}
