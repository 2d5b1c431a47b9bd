/**
 * A project image built on the project's fenced network (the default: RUN steps reach the
 * registries through lazy's egress proxy) against the same build on the host's network
 * (`[container] build_network = "host"`, how lazy built before issue 35), cold and cached, rounds
 * interleaved (which goes first alternates). `bun bench/build.ts [rounds] [dockerfile]`.
 *
 * The Dockerfile (default: apt and npm installs on the test base, a stand-in for lazy's default
 * image, whose cold build takes minutes here; pass `default` to build that one's steps) gets a
 * fresh first step per cold build, so Docker's cache, which both projects share, has nothing of
 * it. A cached build is the same Dockerfile again after `docker rmi --no-prune` of its tag
 * (every layer stays as cache). Each figure is the build alone, from the daemon log: "building …
 * as TAG" to Docker's "Successfully tagged TAG". Needs Docker and the test images
 * (scripts/setup-test-env.sh); `bun run build` first.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Image } from "../src/containers";
import { pct } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const BASE = "lazy-test/node:bookworm";
const rounds = Number(process.argv[2] ?? 3);
const which = process.argv[3] ?? "small";

const SMALL = `FROM ${BASE}
RUN apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*
RUN npm install -g --no-audit --no-fund --loglevel=error typescript@5.6.3 prettier@3.3.3
`;
const steps = which === "default" ? Image.DEFAULT_DOCKERFILE.replace(/^FROM \$\{BASE\}$/m, `FROM ${BASE}`) : SMALL;

interface Proj {
  name: string;
  root: string;
  home: string;
  env: Record<string, string>;
  n: number;
}

function lazy(p: Proj, args: string[]): { code: number; err: string } {
  const r = Bun.spawnSync([BIN, ...args], { cwd: p.root, env: p.env, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode ?? 1, err: r.stderr.toString() };
}

function project(name: string, network: "project" | "host"): Proj {
  const root = mkdtempSync(join(tmpdir(), `lazy-bench-build-${name}-`));
  const home = mkdtempSync(join(tmpdir(), `lazy-bench-build-${name}-home-`));
  const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file" };
  Bun.spawnSync(["git", "init", "-q", "-b", "main", root]);
  Bun.spawnSync(["sh", "-c", "git -c user.name=B -c user.email=b@example.com commit -q --allow-empty -m init"], { cwd: root });
  writeFileSync(
    join(root, "lazy.toml"),
    `[container]\ndockerfile = "Dockerfile"\nbuild_network = "${network}"\nsetup = "exit 7"\n\n[proxy.upstreams]\nanthropic = "http://127.0.0.1:9"\n`,
  );
  Bun.spawnSync([BIN, "trust", "--yes"], { cwd: root, env, stdout: "ignore", stderr: "ignore" });
  // A stored key: a launch asks for the profile's credential before it builds (no model call is made).
  Bun.spawnSync([BIN, "auth", "set", "anthropic"], { cwd: root, env, stdin: new Blob([`sk-ant-api03-${"b".repeat(80)}`]) });
  return { name, root, home, env, n: 0 };
}

/** The daemon log's time of each line, for the build of `tag`: start to "Successfully tagged". */
function buildMs(p: Proj, tag: string, from: number): number {
  const dir = join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!);
  const lines = readFileSync(join(dir, "daemon.log"), "utf8").split("\n").slice(from);
  const at = (l: string | undefined) => (l ? Date.parse(l.slice(0, 24)) : Number.NaN);
  const start = lines.find((l) => l.includes(` as ${tag} on `));
  const end = lines.find((l) => l.includes(`build: Successfully tagged ${tag}`));
  if (!start || !end)
    throw new Error(
      `${p.name}: no build of ${tag} in the daemon log (${lines
        .filter((l) => /ERROR|WARN/.test(l))
        .slice(-3)
        .join(" | ")})`,
    );
  return at(end) - at(start);
}

const logLength = (p: Proj) => {
  try {
    const dir = join(p.home, "daemon", readdirSync(join(p.home, "daemon"))[0]!);
    return readFileSync(join(dir, "daemon.log"), "utf8").split("\n").length - 1;
  } catch {
    return 0;
  }
};

/** One build of `dockerfile` by a launch (its setup fails at once: no turn), in ms; the tag it built. */
function launch(p: Proj, dockerfile: string): { ms: number; tag: string } {
  writeFileSync(join(p.root, "Dockerfile"), dockerfile);
  if (lazy(p, ["trust", "--yes"]).code !== 0) throw new Error(`${p.name}: lazy trust failed`);
  const from = logLength(p);
  const code = `build-${++p.n}`;
  lazy(p, ["task", "add", "build", "--code", code]);
  lazy(p, ["start", code]); // fails at setup ("exit 7"): the image is built by then
  const r = Bun.spawnSync([BIN, "task", "show", code, "--json"], { cwd: p.root, env: p.env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${p.name}: lazy task show ${code}: ${r.stderr}`);
  const events = (JSON.parse(r.stdout.toString()) as { events: { kind: string; data: { done?: string } }[] }).events;
  const tag = events.find((e) => e.kind === "build" && e.data.done)?.data.done;
  if (!tag) throw new Error(`${p.name}: task ${code} built nothing: ${lazy(p, ["logs", code]).err}`);
  return { ms: buildMs(p, tag, from), tag };
}

const fenced = project("fenced", "project");
const host = project("host", "host");
const times: Record<string, number[]> = { "fenced cold": [], "host cold": [], "fenced cached": [], "host cached": [] };
const ratios: { cold: number[]; cached: number[] } = { cold: [], cached: [] };
try {
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 ? [host, fenced] : [fenced, host];
    const round: Record<string, number> = {};
    for (const p of order) {
      // A first step of its own: Docker's shared cache holds nothing of this build.
      const file = steps.replace(/^(FROM [^\n]*\n)/m, `$1RUN echo cold-${crypto.randomUUID()}\n`);
      const cold = launch(p, file);
      // The task's container holds the image: gone first, then the tag (its layers stay as cache).
      Bun.spawnSync(["sh", "-c", `docker ps -aq --filter label=dev.lazy.root=${p.root} | xargs -r docker rm -f`], { stdout: "ignore" });
      const rmi = Bun.spawnSync(["docker", "rmi", "--no-prune", cold.tag], { stdout: "ignore", stderr: "pipe" });
      if (rmi.exitCode !== 0) throw new Error(`docker rmi ${cold.tag}: ${rmi.stderr}`);
      const cached = launch(p, file);
      round[`${p.name} cold`] = cold.ms;
      round[`${p.name} cached`] = cached.ms;
      console.log(`round ${i + 1} ${p.name}: cold ${(cold.ms / 1000).toFixed(1)} s, cached ${(cached.ms / 1000).toFixed(2)} s`);
    }
    for (const [k, v] of Object.entries(round)) times[k]!.push(v);
    ratios.cold.push(round["fenced cold"]! / round["host cold"]!);
    ratios.cached.push(round["fenced cached"]! / round["host cached"]!);
  }
  const med = (xs: number[]) => pct(xs, 50);
  console.log(`\n${which === "default" ? "lazy's default image steps" : "apt + npm installs"} on ${BASE}, ${rounds} rounds`);
  for (const [k, v] of Object.entries(times))
    console.log(`${k.padEnd(14)} p50 ${(med(v) / 1000).toFixed(2)} s  (${v.map((x) => (x / 1000).toFixed(1)).join(", ")})`);
  console.log(
    `fenced / host, cold:   ${med(ratios.cold).toFixed(2)}× (median of rounds: ${ratios.cold.map((r) => r.toFixed(2)).join(", ")})`,
  );
  console.log(
    `fenced / host, cached: ${med(ratios.cached).toFixed(2)}× (median of rounds: ${ratios.cached.map((r) => r.toFixed(2)).join(", ")})`,
  );
} finally {
  for (const p of [fenced, host]) {
    Bun.spawnSync(["sh", "-c", `docker ps -aq --filter label=dev.lazy.root=${p.root} | xargs -r docker rm -f`], { stdout: "ignore" });
    lazy(p, ["daemon", "stop"]);
    rmSync(p.root, { recursive: true, force: true });
    rmSync(p.home, { recursive: true, force: true });
  }
}
