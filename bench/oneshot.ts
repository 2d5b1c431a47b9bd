/**
 * Issue 21's one-shot target: a call's container overhead (launch to the model request leaving
 * the proxy) ≤ 1.5× the same image's `docker run --rm IMAGE true`. The call is `lazy ask "q"`
 * (src/own-calls/calls.ts: a throwaway container, lazy's supervisor, the agent role's harness,
 * Claude Code here), timed from the CLI's spawn (daemon up, image built) to the mock upstream
 * receiving its model request. A call about no task takes the container lazy keeps warm (its
 * Claude Code started and waiting for the prompt on stdin); `lazy ask --task T` never does, so it
 * is measured too as the cold path, every step run. Interleaved in each round, order rotating: `docker run --rm IMAGE
 * true` (the floor), `docker run --rm IMAGE claude --version` (node and Claude Code's code
 * loaded), and the same harness run by hand: `docker run --rm --network host IMAGE claude -p …`
 * with lazy's harness env, as the agent's uid, in the project (mounted read-only, as a call
 * mounts it), straight to the mock on loopback, timed to its model request: the harness's cost
 * with no lazy at all. For the cold call, docker events (create, start, exec_start of its container),
 * the supervisor's started.json (the harness spawned) and the mock's first request (Claude
 * Code's HEAD / probe, before its model request) split the call's time into its steps. The
 * call's end (its answer read, its container removed) is not part of the measure. Each figure is
 * the median over rounds.
 * Run: bun run build && bun bench/oneshot.ts [rounds]   (needs Docker and the test images)
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Image } from "../src/containers";
import * as Mock from "../test/helpers/providers";
import { containerProject, fmt, pct } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 8);
const BASE = process.env.LAZY_BENCH_BASE ?? "lazy-test/node:bookworm";

// The mock answers at once; only the time to its first request is measured.
const upstream = await Mock.anthropic();
upstream.reply = { text: "Forty-two." };
const { root, home, env, sh, dispose } = containerProject(BIN, "oneshot", BASE, upstream.url, {
  // Read only by the plain `docker run … claude -p` baseline (docker run -e NAME).
  ANTHROPIC_BASE_URL: upstream.url,
  ANTHROPIC_API_KEY: "sk-ant-api03-BENCH-DUMMY",
  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  DISABLE_AUTOUPDATER: "1",
});
// Async, so the mock upstream (in this process) answers while the command runs.
async function run(cmd: string[]): Promise<{ ms: number; t0: number }> {
  const t0 = performance.timeOrigin + performance.now();
  const p = Bun.spawn(cmd, { cwd: root, env, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
  const ms = performance.timeOrigin + performance.now() - t0;
  if (code !== 0) throw new Error(`${cmd.join(" ")} failed (${code}): ${err}`);
  return { ms, t0 };
}

/**
 * After a call about no task, lazy makes the next call's warm container (its Claude Code starts
 * and probes the upstream with HEAD /): wait for that, so it does not load the next measurement.
 */
async function settled(): Promise<void> {
  const post = upstream.received.findLastIndex((x) => x.method === "POST");
  for (const end = Date.now() + 30_000; Date.now() < end; await Bun.sleep(20))
    if (upstream.received.slice(post + 1).some((x) => x.method === "HEAD")) break;
  await Bun.sleep(500);
}

let events: ReturnType<typeof Bun.spawn> | undefined;
try {
  // Warm: the daemon up, the image built, the network made; the call's container names the image.
  const warm = run([BIN, "ask", "warm up"]);
  let image = "";
  for (const end = Date.now() + 600_000; !image && Date.now() < end; await Bun.sleep(20))
    image =
      sh(["docker", "ps", "-a", "--filter", `label=dev.lazy.root=${root}`, "--format", "{{.Image}}"])
        .trim()
        .split("\n")[0] ?? "";
  await warm;
  if (!image) throw new Error("the warm-up call's container never showed in docker ps");
  // The cold call's task (never started: a call about it shares its grant, and builds nothing).
  sh([BIN, "task", "add", "A task to ask about", "--code", "bench"]);
  await settled();

  // The call containers' steps, stamped by the engine (ns).
  events = Bun.spawn(
    ["docker", "events", "--filter", `label=dev.lazy.root=${root}`, "--filter", "type=container", "--format", "{{json .}}"],
    { stdout: "pipe", stderr: "ignore" },
  );
  const steps: { action: string; at: number }[] = [];
  void (async () => {
    let buf = "";
    for await (const chunk of events!.stdout as ReadableStream<Uint8Array>) {
      buf += new TextDecoder().decode(chunk);
      for (let i = buf.indexOf("\n"); i >= 0; buf = buf.slice(i + 1), i = buf.indexOf("\n")) {
        const e = JSON.parse(buf.slice(0, i)) as { Action: string; timeNano: number };
        steps.push({ action: e.Action.split(":")[0]!, at: e.timeNano / 1e6 });
      }
    }
  })();
  await Bun.sleep(500);

  const rows: Record<
    "ask" | "cold" | "floor" | "claude" | "plain" | "plainFirst" | "create" | "start" | "exec" | "spawned" | "first",
    number
  >[] = [];
  // The supervisor's started.json lives in the call's folder only while the call runs: watch it.
  const calls = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!, "calls");
  const callDirs = () => (existsSync(calls) ? readdirSync(calls) : []);
  async function spawnedAt(done: () => boolean): Promise<number> {
    const before = new Set(callDirs()); // the warm container's folder is not this call's
    while (!done()) {
      for (const id of callDirs()) {
        if (before.has(id)) continue;
        try {
          return Date.parse(JSON.parse(readFileSync(join(calls, id, "turns", "1", "started.json"), "utf8")).at);
        } catch {}
      }
      await Bun.sleep(2);
    }
    return NaN;
  }
  const paths = new Set<string>();
  /**
   * `lazy ask` about no task (warm: the container lazy keeps ready, its Claude Code waiting), or
   * about a task (cold: calls about a task never take the warm container, so every step runs).
   */
  async function ask(kind: "ask" | "cold"): Promise<void> {
    upstream.reset();
    steps.length = 0;
    let finished = false;
    const args = kind === "ask" ? [BIN, "ask", "What is six times seven?"] : [BIN, "ask", "--task", "bench", "What is six times seven?"];
    const call = run(args).finally(() => (finished = true));
    const spawned = spawnedAt(() => finished);
    const { t0 } = await call;
    const first = upstream.received[0];
    const model = upstream.received.find((x) => x.method === "POST" && x.path.startsWith("/v1/messages"));
    if (!first || !model) throw new Error("lazy ask finished without a model request reaching the mock upstream");
    paths.add(`${first.method} ${first.path}`);
    if (kind === "ask") {
      row.ask = model.at - t0;
      await settled();
      return;
    }
    const at = (a: string) => (steps.find((s) => s.action === a)?.at ?? NaN) - t0;
    Object.assign(row, {
      cold: model.at - t0,
      create: at("create"),
      start: at("start"),
      exec: at("exec_start"),
      spawned: (await spawned) - t0,
      first: first.at - t0,
    });
  }
  let row = {} as (typeof rows)[number];
  for (let r = 0; r < rounds; r++) {
    row = {} as (typeof rows)[number];
    const variants: [string, () => Promise<void>][] = [
      ["ask", () => ask("ask")],
      ["cold", () => ask("cold")],
      [
        "floor",
        async () => {
          row.floor = (await run(["docker", "run", "--rm", image, "true"])).ms;
        },
      ],
      [
        "claude",
        async () => {
          row.claude = (await run(["docker", "run", "--rm", image, "claude", "--version"])).ms;
        },
      ],
      [
        "plain",
        async () => {
          upstream.reset();
          // The env lazy's Claude harness gets (src/harness/claude.ts), the key a dummy, by env.
          const e = ["ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER"].flatMap(
            (n) => ["-e", n],
          );
          const uid = `${Image.agentUid()}:${Image.agentUid()}`;
          const at = [
            "--user",
            uid,
            "-v",
            `${root}:${root}:ro`,
            "-w",
            root,
            "-e",
            "HOME=/tmp",
            "-e",
            "GIT_CONFIG_COUNT=1",
            "-e",
            "GIT_CONFIG_KEY_0=safe.directory",
            "-e",
            "GIT_CONFIG_VALUE_0=*",
          ];
          const { t0 } = await run([
            "docker",
            "run",
            "--rm",
            "--network",
            "host",
            ...at,
            ...e,
            image,
            "claude",
            "-p",
            "What is six times seven?",
            "--output-format",
            "stream-json",
            "--verbose",
          ]);
          const model = upstream.received.find((x) => x.method === "POST" && x.path.startsWith("/v1/messages"));
          if (!model) throw new Error("claude -p in a plain docker run never reached the mock upstream");
          row.plain = model.at - t0;
          row.plainFirst = upstream.received[0]!.at - t0;
        },
      ],
    ];
    for (let k = 0; k < variants.length; k++) await variants[(r + k) % variants.length]![1]();
    rows.push(row);
    console.log(
      `round ${r + 1}: ask→model ${fmt(row.ask)} (cold, about a task: ${fmt(row.cold)}), docker run true ${fmt(row.floor)}, claude --version ${fmt(row.claude)}, plain claude -p→model ${fmt(row.plain)}`,
    );
  }
  const med = (k: keyof (typeof rows)[number]) =>
    pct(
      rows.map((x) => x[k]),
      50,
    );
  const ratios = rows.map((x) => x.ask / x.floor);
  console.log(
    `oneshot bench: ${rounds} rounds, image ${image}, the mock's first request ${[...paths].join(", ")}, ${new Date().toISOString()}`,
  );
  console.log(
    `lazy ask → POST /v1/messages at mock    p50 ${fmt(med("ask"))}   p95 ${fmt(
      pct(
        rows.map((x) => x.ask),
        95,
      ),
    )}`,
  );
  console.log(
    `docker run --rm IMAGE true (the floor)  p50 ${fmt(med("floor"))}   p95 ${fmt(
      pct(
        rows.map((x) => x.floor),
        95,
      ),
    )}`,
  );
  console.log(
    `docker run --rm IMAGE claude --version  p50 ${fmt(med("claude"))}   p95 ${fmt(
      pct(
        rows.map((x) => x.claude),
        95,
      ),
    )}`,
  );
  console.log(
    `docker run claude -p → POST at mock  p50 ${fmt(med("plain"))}   p95 ${fmt(
      pct(
        rows.map((x) => x.plain),
        95,
      ),
    )}   (no lazy: the harness's own floor; its first request at ${fmt(med("plainFirst"))})`,
  );
  console.log(
    `lazy ask --task (cold) → POST at mock  p50 ${fmt(med("cold"))}   p95 ${fmt(
      pct(
        rows.map((x) => x.cold),
        95,
      ),
    )}`,
  );
  console.log(
    `the cold call's steps from the CLI's spawn (p50): container create ${fmt(med("create"))}, start ${fmt(med("start"))}, supervisor exec ${fmt(med("exec"))}, harness spawned ${fmt(med("spawned"))}, first request ${fmt(med("first"))}, model request ${fmt(med("cold"))}`,
  );
  console.log(
    `ratio to docker run true (p50 of rounds): ${pct(ratios, 50).toFixed(2)}×   per round ${ratios.map((x) => x.toFixed(2)).join(" ")}   target: ≤ 1.5×`,
  );
  const colds = rows.map((x) => x.cold / x.floor);
  console.log(
    `cold ratio to docker run true (p50 of rounds): ${pct(colds, 50).toFixed(2)}×   per round ${colds.map((x) => x.toFixed(2)).join(" ")}`,
  );
  const plain = rows.map((x) => x.ask / x.plain);
  console.log(
    `ratio to plain docker run claude -p (p50 of rounds): ${pct(plain, 50).toFixed(2)}×   per round ${plain.map((x) => x.toFixed(2)).join(" ")}`,
  );
} finally {
  events?.kill();
  dispose();
  await upstream.close();
}
