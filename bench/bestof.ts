/**
 * Best-of-N launch (issue 30): from the request that makes the tasks to every agent running
 * (the supervisor's started.json for each), three candidates of one group against one task,
 * the same requests `lazy run` and `lazy run --profiles` make (POST /api/tasks + start; POST
 * /api/groups + the three starts at once). Rounds interleave one launch and one group so both
 * see the same machine; the figure is the ratio of medians. Target: ≤ 1.5× one launch.
 * Each sample is fresh tasks (worktrees and containers made anew); the image is warm.
 * The floor is Docker alone (`docker run --rm IMAGE true`, one and three at once) on a network
 * of the bench's own. LAZY_BENCH_OLD=PATH drives an older build too (a project and daemon of
 * its own) in the same rounds, the builds' order rotating; LAZY_BENCH_KEEP_LOG=DIR keeps each
 * daemon's log and prints each candidate's time (for where a launch's time goes).
 * Run: bun run build && bun bench/bestof.ts [rounds]   (needs Docker and the test images)
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { containerProject, fmt, pct } from "./lib";

const rounds = Number(process.argv[2] ?? 6);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";
const KEEP = process.env.LAZY_BENCH_KEEP_LOG;

const upstream = await Mock.anthropic();
const projects: ReturnType<typeof containerProject>[] = [];
let floorNet: string | undefined;

/** A project driven by `bin`, its daemon up and its image and network warm: what a round asks of it. */
async function build(name: string, bin: string) {
  const p = containerProject(bin, "bestof", BASE, upstream.url);
  projects.push(p);
  // Warm: the daemon up, the image built (or found), the network made.
  p.sh([bin, "task", "add", "warm up", "--code", "warm-up"]);
  p.sh([bin, "start", "warm-up"]);
  const state = join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!);
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
    if (!existsSync(started)) throw new Error(`${name}: task ${id}: the agent never started`);
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
  const image: string = JSON.parse(p.sh(["docker", "inspect", `lazy-${state.split("/").at(-1)}-${warm.id}`]))[0].Config.Image;
  await settle([warm.id]);
  const one: number[] = [];
  const three: number[] = [];
  const sample = async (kind: "one" | "group", i: number) => {
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
      if (KEEP)
        console.log(
          `${name} candidates`,
          ms.map((x) => x.toFixed(0)).join(" "),
          g.tasks.map((t: { id: string }) => t.id.slice(0, 6)).join(" "),
        );
      await settle(g.tasks.map((t: { id: string }) => t.id));
    }
  };
  const keepLog = () => KEEP && Bun.spawnSync(["cp", join(state, "daemon.log"), join(KEEP, `${name}.log`)]);
  return { name, image, one, three, sample, keepLog };
}

try {
  const builds = [await build("lazy", process.env.LAZY_BENCH_BIN ?? resolve(import.meta.dir, "../dist/lazy"))];
  if (process.env.LAZY_BENCH_OLD) builds.push(await build("old", process.env.LAZY_BENCH_OLD));
  // The floor: Docker alone running one container, and three at once, on a bridge network of
  // the bench's own (the project's is dropped by housekeeping once no task runs, and a
  // `docker run` naming a missing network fails at once: the floor must be a run that ran).
  const net = `lazy-bench-floor-${process.pid}`;
  projects[0]!.sh(["docker", "network", "create", net]);
  floorNet = net;
  const dockerRun = async () => {
    const p = Bun.spawn(["docker", "run", "--rm", "--network", net, builds[0]!.image, "true"], { stdout: "ignore", stderr: "pipe" });
    if ((await p.exited) !== 0) throw new Error(`the floor's docker run failed: ${await new Response(p.stderr).text()}`);
  };
  const floorOne: number[] = [];
  const floorThree: number[] = [];
  for (let i = 0; i < rounds; i++) {
    // Which goes first alternates (and which build), so none always follows another's clean-up.
    for (const b of i % 2 ? [...builds].reverse() : builds)
      for (const kind of i % 2 ? (["group", "one"] as const) : (["one", "group"] as const)) await b.sample(kind, i);
    const f0 = performance.now();
    await dockerRun();
    floorOne.push(performance.now() - f0);
    const f1 = performance.now();
    await Promise.all([dockerRun(), dockerRun(), dockerRun()]);
    floorThree.push(performance.now() - f1);
    console.log(
      `round ${i + 1}: ${builds.map((b) => `${b.name} one ${fmt(b.one.at(-1)!)} three ${fmt(b.three.at(-1)!)}`).join("   ")}   docker run: one ${fmt(floorOne.at(-1)!)} three ${fmt(floorThree.at(-1)!)}`,
    );
  }
  console.log(`best-of-N bench: ${rounds} rounds, ${BASE}, ${new Date().toISOString()}`);
  for (const b of builds) {
    console.log(`${b.name}: one launch (add + start → agent running)          p50 ${fmt(pct(b.one, 50))}   max ${fmt(Math.max(...b.one))}`);
    console.log(
      `${b.name}: three candidates (group + 3 starts → all running) p50 ${fmt(pct(b.three, 50))}   max ${fmt(Math.max(...b.three))}`,
    );
    console.log(`${b.name}: ratio (p50): ${(pct(b.three, 50) / pct(b.one, 50)).toFixed(2)}×   target ≤ 1.5×`);
  }
  console.log(
    `floor: docker run --rm IMAGE true, one p50 ${fmt(pct(floorOne, 50))}, three at once p50 ${fmt(pct(floorThree, 50))}: ${(pct(floorThree, 50) / pct(floorOne, 50)).toFixed(2)}×`,
  );
  for (const b of builds) b.keepLog();
} finally {
  for (const p of projects) p.dispose();
  if (floorNet) Bun.spawnSync(["docker", "network", "rm", floorNet], { stdout: "ignore", stderr: "ignore" });
  await upstream.close();
}
