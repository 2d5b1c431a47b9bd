/**
 * What the disk bound's watch costs (runner/disk-bound.ts; the behaviour is asserted by
 * test/attacks/disk.test.ts): 20 running tasks, each with a worktree of 5,000 files in 100
 * folders, its state folders and a writable layer of 2,000 files, all on this host's disk; five
 * of them write 2 MiB a second throughout (a build). The same process is measured twice for
 * `seconds` each, with no watch (the floor: the writers and the process idling) and with the
 * watch ticking, after a warm-up that takes each task's first walk. CPU is this process's own
 * plus its reaped children's (du), from /proc; the figure is the difference as a share of one
 * core. The engine is not asked (a stand-in names each task's layer folder and the data root);
 * a real one is asked once per container for its layer.
 * Run: bun bench/disk.ts [seconds=120] [bound=10g]
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bus } from "../src/bus";
import { loadText } from "../src/config";
import type { Runtime } from "../src/containers";
import { DiskBound } from "../src/runner/disk-bound";
import { Ledger } from "../src/runner/ledger";
import * as Store from "../src/store";
import * as Log from "../src/util/log";

const seconds = Number(process.argv[2] ?? 120);
const bound = process.argv[3] ?? "10g";
const TASKS = 20;
const WRITERS = 5;

const dir = mkdtempSync(join(tmpdir(), "lazy-bench-disk-"));
const stateDir = join(dir, "state");
mkdirSync(join(stateDir, "tasks"), { recursive: true });

function tree(root: string, folders: number, files: number): void {
  for (let d = 0; d < folders; d++) {
    const f = join(root, `d${d}`);
    mkdirSync(f, { recursive: true });
    for (let i = 0; i < files / folders; i++) writeFileSync(join(f, `f${i}.ts`), `export const x${i} = ${i};\n`);
  }
}

const loaded = loadText(`[container.limits]\ndisk = "${bound}"\n`);
if (!loaded.ok) throw new Error(loaded.problems.map((p) => p.message).join("; "));
const config = loaded.config;
const db = Store.open(join(stateDir, "store.db"));
const ledger = new Ledger({ db, bus: new Bus(), release: () => {} });
const tasks: Store.Task[] = [];
for (let i = 0; i < TASKS; i++) {
  const t = Store.Tasks.add(db, { prompt: `task ${i}`, code: `t${i}`, profile: "claude" });
  Store.Tasks.move(db, t.id, "running");
  Store.Runs.save(db, t.id, { container_id: `c${i}` });
  tasks.push(t);
  for (const sub of ["home", "harness", "turns/1"]) mkdirSync(join(stateDir, "tasks", t.id, sub), { recursive: true });
  tree(join(stateDir, "worktrees", `t${i}`), 100, 5000);
  tree(join(dir, "layers", `c${i}`), 40, 2000);
}
console.log(`${TASKS} tasks: ${TASKS * 7000} files made in ${dir}; bound ${bound}`);

const runtime = {
  layerDir: async (id: string) => join(dir, "layers", id),
  writableSize: async () => undefined,
  dataRoot: async () => dir,
} as unknown as Runtime;
Log.configure({ stderr: false });
const watch = new DiskBound({
  db,
  log: Log.create("bench"),
  config: () => config,
  ledger,
  docker: async () => runtime,
  stateDir,
  taskDir: (t) => join(stateDir, "tasks", t.id),
  worktree: (t) => join(stateDir, "worktrees", t.code ?? t.id),
  halt: async () => undefined,
  low: () => undefined,
});

// The writers: their own processes (their CPU is not this process's), the same in both phases.
const writers = tasks
  .slice(0, WRITERS)
  .map((t) =>
    Bun.spawn(
      [
        "sh",
        "-c",
        `while true; do dd if=/dev/zero of=${join(stateDir, "worktrees", t.code!, "build.out")} bs=1M count=2 conv=notrunc oflag=append status=none; sleep 1; done`,
      ],
      { stdout: "ignore", stderr: "ignore" },
    ),
  );

/** CPU seconds of this process and its reaped children (utime, stime, cutime, cstime). */
function cpu(): number {
  const f = readFileSync("/proc/self/stat", "utf8");
  const v = f.slice(f.lastIndexOf(")") + 2).split(" ");
  const hz = 100;
  return (Number(v[11]) + Number(v[12]) + Number(v[13]) + Number(v[14])) / hz;
}

async function phase(name: string): Promise<number> {
  const c0 = cpu();
  const t0 = performance.now();
  await Bun.sleep(seconds * 1000);
  const used = cpu() - c0;
  const wall = (performance.now() - t0) / 1000;
  console.log(`${name}: ${used.toFixed(2)} s of CPU in ${wall.toFixed(0)} s (${((used / wall) * 100).toFixed(3)} % of one core)`);
  return used / wall;
}

const floor = await phase("no watch");
// Warm-up: each task's first walk (20 walks at once), measured on its own.
const w0 = cpu();
watch.tick();
await Bun.sleep(5000);
const warm = cpu() - w0;
watch.start();
const watched = await phase("watch  ");
watch.stop();
for (const w of writers) w.kill();
console.log(`first walk of all ${TASKS} tasks: ${warm.toFixed(2)} s of CPU`);
console.log(`the watch: ${((watched - floor) * 100).toFixed(3)} % of one core with ${TASKS} running tasks (target <= 1 %)`);
db.close();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
