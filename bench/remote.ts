/**
 * A launch on a remote engine against the same launch on the local one, same run (issue 28:
 * ≤ 2×), and the worktree shipping time of a 100 MB repository beside it. The remote engine is
 * this machine's second engine (scripts/second-engine.sh: loopback tcp, its own mount
 * namespace), so the figure is what shipping costs, not a network's latency. A launch is
 * `lazy start` of a fresh task to the agent's process running (the supervisor's started.json),
 * as bench/start.ts measures it: worktree, container, (remote) shipping, harness. Samples
 * alternate local and remote; medians are compared. Then the same for a project whose
 * repository holds 100 MB of incompressible files (so ~100 MB of objects and ~100 MB of
 * worktree travel), with the shipping time the daemon logs for each remote launch. The
 * repository's objects go to the engine once per project (a volume): the first launch's
 * shipping, which sends them, is printed apart.
 * With `--ssh` the remote launches reach that engine as ssh://root@127.0.0.1:23751 instead
 * (scripts/second-engine-ssh.sh), through the tunnel lazy's daemon holds.
 * Run: bun run build && bun bench/remote.ts [samples] [--ssh]   (needs Docker, the test images, root)
 */

import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as Mock from "../test/helpers/providers";
import { remoteImage, secondEngine, secondEngineSsh, sshClient } from "../test/helpers/second-engine";
import { containerProject, fmt, pct, trustToml } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const samples = Number(process.argv[2] ?? 6);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

const upstream = await Mock.anthropic();
const engine = secondEngine();
const ssh = process.argv.includes("--ssh") ? secondEngineSsh() : undefined;
const client = ssh ? sshClient({ ports: [ssh.port], known: "real" }) : undefined;
const remoteEnv: Record<string, string> = ssh && client ? { DOCKER_HOST: ssh.host, ...client.env } : { DOCKER_HOST: engine.host };
type P = ReturnType<typeof containerProject> & { state: () => string; remote: boolean };

function project(label: string, remote: boolean, fill?: (root: string) => void): P {
  const p = containerProject(BIN, label, BASE, upstream.url, remote ? remoteEnv : {});
  if (remote) {
    writeFileSync(
      join(p.root, "lazy.toml"),
      `${readFileSync(join(p.root, "lazy.toml"), "utf8")}\n[proxy]\nremote_bind = "${engine.bind}"\n`,
    );
    trustToml(BIN, p.root, p.env);
  }
  if (fill) {
    fill(p.root);
    p.sh(["git", "add", "-A", "."]);
    p.sh(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "the payload"]);
  }
  const dispose = p.dispose;
  return {
    ...p,
    remote,
    state: () => join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!),
    dispose: () => {
      if (remote) {
        const ids = p
          .sh(["docker", "-H", engine.host, "ps", "-aq", "--filter", `label=dev.lazy.root=${p.root}`])
          .split("\n")
          .filter(Boolean);
        if (ids.length) Bun.spawnSync(["docker", "-H", engine.host, "rm", "-f", ...ids]);
        const slug = readdirSync(join(p.home, "daemon"))[0];
        if (slug) Bun.spawnSync(["docker", "-H", engine.host, "network", "rm", `lazy-${slug}`]);
        if (slug) Bun.spawnSync(["docker", "-H", engine.host, "volume", "rm", `lazy-objects-${slug}`]);
      }
      dispose();
    },
  };
}

/** One launch: a fresh task started, to its agent running (ms), and the shipping time the daemon logged (remote). */
async function launch(p: P, code: string): Promise<{ ms: number; ship?: number }> {
  const t = JSON.parse(p.sh([BIN, "task", "add", `sample ${code}`, "--code", code, "--json"]));
  const t0 = performance.now();
  p.sh([BIN, "start", code]);
  const started = join(p.state(), "tasks", t.id, "turns", "1", "started.json");
  for (const end = Date.now() + 120_000; !existsSync(started) && Date.now() < end; ) await Bun.sleep(10);
  if (!existsSync(started)) throw new Error(`${code}: the agent never started`);
  const took = Date.parse(JSON.parse(readFileSync(started, "utf8")).at) - (performance.timeOrigin + t0);
  for (const end = Date.now() + 120_000; Date.now() < end; await Bun.sleep(100))
    if (JSON.parse(p.sh([BIN, "task", "show", code, "--json"])).task.status !== "running") break;
  const log = readFileSync(join(p.state(), "daemon.log"), "utf8");
  const ms = (re: RegExp) =>
    [...log.matchAll(re)]
      .filter((m) => m[1] === code)
      .map((m) => Number(m.at(-1)))
      .reduce((a, b) => a + b, 0);
  const shipped = p.remote
    ? ms(/task (\S+): worktree shipped to \S+ in (\d+) ms/g) + ms(/task (\S+): \d+ object files \([\d.]+ MiB\) sent to \S+ in (\d+) ms/g)
    : undefined;
  p.sh([BIN, "close", code]);
  return { ms: took, ship: shipped };
}

/** 100 MB in 50 files of random bytes (git cannot compress them). */
const payload = (root: string) => {
  for (let i = 0; i < 50; i++) writeFileSync(join(root, `blob-${i}.bin`), randomBytes(2 * 1024 * 1024));
};

const made: P[] = [];
try {
  const local = project("remote-bench-local", false);
  made.push(local);
  const remote = project("remote-bench-remote", true);
  made.push(remote);
  await remoteImage(engine.host, remote.root);
  const bigLocal = project("remote-bench-big-local", false, payload);
  made.push(bigLocal);
  const bigRemote = project("remote-bench-big-remote", true, payload);
  made.push(bigRemote);
  upstream.reply = { text: "ok." };
  // Warm: image found, network made, the remote engine's reachability probed.
  const first = new Map<P, number | undefined>();
  for (const p of made) first.set(p, (await launch(p, "warm-up")).ship);

  const rounds = async (a: P, b: P, n: number, tag: string) => {
    const r = { local: [] as number[], remote: [] as number[], ship: [] as number[] };
    for (let i = 0; i < n; i++)
      for (const p of i % 2 ? [b, a] : [a, b]) {
        const s = await launch(p, `${tag}-${i}`);
        (p.remote ? r.remote : r.local).push(s.ms);
        if (s.ship !== undefined) r.ship.push(s.ship);
      }
    return r;
  };
  const small = await rounds(local, remote, samples, "s");
  const big = await rounds(bigLocal, bigRemote, Math.max(2, Math.floor(samples / 2)), "b");
  console.log(`remote bench: ${samples} rounds, engine ${remoteEnv.DOCKER_HOST}, ${new Date().toISOString()}`);
  const line = (what: string, r: { local: number[]; remote: number[]; ship: number[] }) => {
    console.log(
      `${what}: local p50 ${fmt(pct(r.local, 50))}   remote p50 ${fmt(pct(r.remote, 50))}   ratio ${(pct(r.remote, 50) / pct(r.local, 50)).toFixed(2)}×   shipping p50 ${fmt(pct(r.ship, 50))}`,
    );
  };
  line("launch, small repo", small);
  line("launch, 100 MB repo", big);
  console.log(
    `first launch of each remote project (its objects sent too): small repo shipping ${fmt(first.get(remote) ?? Number.NaN)}, 100 MB repo ${fmt(first.get(bigRemote) ?? Number.NaN)}`,
  );
} finally {
  for (const p of made) p.dispose();
  await upstream.close();
  if (client) rmSync(client.dir, { recursive: true, force: true });
}
