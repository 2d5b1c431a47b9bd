/**
 * Best-of-N launch (issue 30): from the request that makes the tasks to every agent running
 * (the supervisor's started.json for each), three candidates of one group against one task,
 * the same requests `lazy run` and `lazy run --profiles` make (POST /api/tasks + start; POST
 * /api/groups + the three starts at once). Rounds interleave one launch and one group so both
 * see the same machine; the figure is the ratio of medians. Target: ≤ 1.5× one launch.
 * Each sample is fresh tasks (worktrees and containers made anew); the image is warm.
 * The floor is Docker alone (`docker run --rm IMAGE true`, one and three at once) on a network
 * of the bench's own. LAZY_BENCH_BIN=PATH measures another build (an older one: run the bench
 * with each in turn); LAZY_BENCH_KEEP_LOG=FILE keeps the daemon's log and prints each
 * candidate's time (for where a launch's time goes).
 * Run: bun run build && bun bench/bestof.ts [rounds]   (needs Docker and the test images)
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { containerProject, pct, fmt } from "./lib";
import * as Mock from "../test/helpers/providers";

const BIN = process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 6);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

const upstream = await Mock.anthropic();
const { home, sh, dispose } = containerProject(BIN, "bestof", BASE, upstream.url);
let floorNet: string | undefined;

try {
  // Warm: the daemon up, the image built (or found), the network made.
  sh([BIN, "task", "add", "warm up", "--code", "warm-up"]);
  sh([BIN, "start", "warm-up"]);
  const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
  const rt = JSON.parse(readFileSync(join(state, "daemon.json"), "utf8"));
  const token = readFileSync(join(state, "token"), "utf8").trim();
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`http://${rt.api.host}:${rt.api.port}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? (method === "GET" ? undefined : "{}") : JSON.stringify(body),
    });
    if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
    return r.json() as Promise<any>;
  };
  /** ms from t0 to the moment the agent of task `id` started its first turn. */
  const running = async (id: string, t0: number) => {
    const started = join(state, "tasks", id, "turns", "1", "started.json");
    const deadline = Date.now() + 120_000;
    while (!existsSync(started) && Date.now() < deadline) await Bun.sleep(5);
    if (!existsSync(started)) throw new Error(`task ${id}: the agent never started`);
    return Date.parse(JSON.parse(readFileSync(started, "utf8")).at) - (performance.timeOrigin + t0);
  };
  const settle = async (ids: string[]) => {
    for (const id of ids) {
      for (const end = Date.now() + 120_000; Date.now() < end; await Bun.sleep(100))
        if ((await api("GET", `/api/tasks/${id}`)).task.status !== "running") break;
      await api("POST", `/api/tasks/${id}/close`);
    }
  };
  const warm = (await api("GET", "/api/tasks/warm-up")).task;
  const image = JSON.parse(sh(["docker", "inspect", `lazy-${state.split("/").at(-1)}-${warm.id}`]))[0].Config.Image;
  await settle([warm.id]);

  // The floor: Docker alone running one container, and three at once, on a bridge network of
  // the bench's own (the project's is dropped by housekeeping once no task runs, and a
  // `docker run` naming a missing network fails at once: the floor must be a run that ran).
  const net = `lazy-bench-floor-${process.pid}`;
  sh(["docker", "network", "create", net]);
  floorNet = net;
  const dockerRun = async () => {
    const p = Bun.spawn(["docker", "run", "--rm", "--network", net, image, "true"], { stdout: "ignore", stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(`the floor's docker run failed: ${await new Response(p.stderr).text()}`);
  };
  const floorOne: number[] = [];
  const floorThree: number[] = [];
  const one: number[] = [];
  const three: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Which goes first alternates, so neither always follows the other's clean-up.
    for (const kind of i % 2 ? (["group", "one"] as const) : (["one", "group"] as const)) {
      const t0 = performance.now();
      if (kind === "one") {
        const t = await api("POST", "/api/tasks", { prompt: `one ${i}`, code: `one-${i}` });
        await api("POST", `/api/tasks/${t.id}/start`);
        one.push(await running(t.id, t0));
        await settle([t.id]);
      } else {
        const g = await api("POST", "/api/groups", { prompt: `group ${i}`, n: 3, code: `g${i}` });
        await Promise.all(g.tasks.map((t: { id: string }) => api("POST", `/api/tasks/${t.id}/start`)));
        const ms = await Promise.all(g.tasks.map((t: { id: string }) => running(t.id, t0)));
        three.push(Math.max(...ms));
        if (process.env.LAZY_BENCH_KEEP_LOG)
          console.log("candidates", ms.map((x) => x.toFixed(0)).join(" "), g.tasks.map((t: { id: string }) => t.id.slice(0, 6)).join(" "));
        await settle(g.tasks.map((t: { id: string }) => t.id));
      }
    }
    const f0 = performance.now();
    await dockerRun();
    floorOne.push(performance.now() - f0);
    const f1 = performance.now();
    await Promise.all([dockerRun(), dockerRun(), dockerRun()]);
    floorThree.push(performance.now() - f1);
    console.log(
      `round ${i + 1}: one ${fmt(one.at(-1)!)}   three ${fmt(three.at(-1)!)}   docker run: one ${fmt(floorOne.at(-1)!)}   three ${fmt(floorThree.at(-1)!)}`,
    );
  }
  console.log(`best-of-N bench: ${rounds} rounds, ${BASE}, ${new Date().toISOString()}`);
  console.log(`one launch (add + start → agent running)       p50 ${fmt(pct(one, 50))}   max ${fmt(Math.max(...one))}`);
  console.log(`three candidates (group + 3 starts → all running) p50 ${fmt(pct(three, 50))}   max ${fmt(Math.max(...three))}`);
  console.log(`ratio (p50): ${(pct(three, 50) / pct(one, 50)).toFixed(2)}×   target ≤ 1.5×`);
  console.log(
    `floor: docker run --rm IMAGE true, one p50 ${fmt(pct(floorOne, 50))}, three at once p50 ${fmt(pct(floorThree, 50))}: ${(pct(floorThree, 50) / pct(floorOne, 50)).toFixed(2)}×`,
  );
} finally {
  if (process.env.LAZY_BENCH_KEEP_LOG)
    for (const d of readdirSync(join(home, "daemon")))
      Bun.spawnSync(["cp", join(home, "daemon", d, "daemon.log"), process.env.LAZY_BENCH_KEEP_LOG]);
  dispose();
  if (floorNet) Bun.spawnSync(["docker", "network", "rm", floorNet], { stdout: "ignore", stderr: "ignore" });
  await upstream.close();
}
