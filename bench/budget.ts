/**
 * Issue 19's budget target, measured against a baseline in the same run: `lazy stats budget`
 * over 1,000,000 audited requests and 10,000 tasks answers in ≤ 100 ms p50, and ≤ 3× the same
 * aggregate run by the sqlite3 CLI on a copy of the store.
 *
 * The store is seeded directly (a daemon migrates it first, then stops): 10,000 tasks (and
 * their runs rows), usage_days counters adding up to 1,000,000 requests over 30 UTC days, the
 * per-task token counters, and the 1,000,000 audit rows themselves in audit_batches (packed by
 * src/proxy/audit/store.ts's Builder, as the writer packs them). Then the daemon starts again
 * and three things are timed in turn, round after round (this VM's speed drifts):
 *  - `lazy stats budget --json`, the whole process;
 *  - GET /api/stats/budget alone (fetch from this process, with the token);
 *  - `sqlite3 copy.db` running report()'s four GROUP BY queries (src/spending/budget.ts), the
 *    whole process;
 *  - `lazy --version`, the floor any lazy command pays (a process, no daemon round trip).
 * Run: bun run build && bun bench/budget.ts [rounds]   (needs sqlite3: apt-get install sqlite3)
 */
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { costOf, priceOf, priceText } from "../src/prices";
import type { Row } from "../src/proxy/audit";
import * as AuditStore from "../src/proxy/audit/store";
import { fmt, pct, timeProcess, trustToml } from "./lib";

const BIN = resolve(import.meta.dir, "../dist/lazy");
const rounds = Number(process.argv[2] ?? 30);
const TASKS = 10_000;
const REQUESTS = 1_000_000;
const DAYS = 30;

const root = mkdtempSync(join(tmpdir(), "lazy-bench-budget-"));
const home = mkdtempSync(join(tmpdir(), "lazy-bench-budget-home-"));
const env = { ...(process.env as Record<string, string>), LAZY_HOME: home, LAZY_CREDENTIAL_BACKEND: "file" };
Bun.spawnSync(["git", "init", "-q", root]);
// Two profiles with priced models and one built-in without (tokens only), as a project mixes
// them; the audit bound above the million rows, so the trail keeps what was seeded.
writeFileSync(
  join(root, "lazy.toml"),
  `[proxy.audit]\nmax_rows = 2000000\n\n[budget]\nper_task_tokens = 50000000\nper_day_tokens = 1000000000\n\n[profiles.sonnet]\nharness = "claude"\nmodel = "claude-sonnet-4-5"\n\n[profiles.gpt]\nharness = "codex"\nmodel = "gpt-5-codex"\n`,
);
trustToml(BIN, root, env);
const lazy = (...args: string[]) => timeProcess([BIN, ...args], env, root);

/** A deterministic generator, so every run seeds the same store. */
let seed = 19;
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};

function seedStore(path: string): { rows: number; tasks: number; requests: number } {
  const db = new Database(path);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");
  const now = Date.now();
  const dayMs = 86_400_000;
  const profiles = [
    { profile: "sonnet", credentials: ["anthropic", "anthropic-team"], model: "claude-sonnet-4-5" },
    { profile: "gpt", credentials: ["openai"], model: "gpt-5-codex" },
    { profile: "claude", credentials: ["anthropic"], model: "vendor-unpriced" },
  ];
  const modelOf = new Map(profiles.map((p) => [p.profile, p.model]));
  // Each task lives 1-4 consecutive days within the last 30, on one profile, and makes 1 to
  // ~1,000 requests (skewed: most tasks are short), the 10,000 making the million; a
  // request's tokens are a Claude Code turn's: mostly cache reads.
  type Task = { id: string; code: string | null; profile: string; credential: string; firstDay: number; days: number; requests: number };
  const tasks: Task[] = [];
  const ids = new Set<string>();
  for (let i = 0; i < TASKS; i++) {
    let id: string;
    do
      id = Math.floor(rand() * 0xffffffff)
        .toString(16)
        .padStart(8, "0");
    while (ids.has(id));
    ids.add(id);
    const p = profiles[i % profiles.length]!;
    const days = 1 + Math.floor(rand() * 4);
    tasks.push({
      id,
      code: i % 2 ? `bench-${i}` : null,
      profile: p.profile,
      credential: p.credentials[Math.floor(rand() * p.credentials.length)]!,
      firstDay: Math.floor(rand() * (DAYS - days + 1)),
      days,
      requests: 0,
    });
  }
  const weights = tasks.map(() => rand() ** 3);
  const sum = weights.reduce((a, b) => a + b, 0);
  let given = 0;
  for (const [i, t] of tasks.entries()) given += t.requests = Math.max(1, Math.floor((weights[i]! / sum) * REQUESTS));
  tasks[0]!.requests += REQUESTS - given;
  const usage = { input: 2_000, output: 500, cacheRead: 20_000, cacheWrite: 1_000 };
  db.transaction(() => {
    const task = db.query(
      "INSERT INTO tasks (id, code, title, prompt, status, profile, created_at, updated_at) VALUES (?, ?, ?, ?, 'done', ?, ?, ?)",
    );
    const run = db.query("INSERT INTO runs (task_id, turn, profile, budget_tokens) VALUES (?, 1, ?, ?)");
    const tokens = db.query(
      "INSERT INTO task_tokens (task_id, requests, input_tokens, output_tokens, cache_read, cache_write) VALUES (?, ?, ?, ?, ?, ?)",
    );
    const day = db.query(
      "INSERT INTO usage_days (day, task_id, profile, credential, model, price, requests, input_tokens, output_tokens, cache_read, cache_write, usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    for (const [i, t] of tasks.entries()) {
      const at = now - (DAYS - 1 - t.firstDay) * dayMs;
      task.run(t.id, t.code, `bench task ${i}`, "p", t.profile, at, at);
      run.run(t.id, t.profile, i % 100 === 0 ? 10_000_000 : 0);
      const n0 = t.requests;
      tokens.run(t.id, n0, n0 * usage.input, n0 * usage.output, n0 * usage.cacheRead, n0 * usage.cacheWrite);
      let left = n0;
      for (let d = 0; d < t.days; d++) {
        const n = d === t.days - 1 ? left : Math.floor(n0 / t.days);
        left -= n;
        const date = new Date(now - (DAYS - 1 - t.firstDay - d) * dayMs).toISOString().slice(0, 10);
        // Priced as the audit writer prices a request: by its model, the dollars kept beside the tokens.
        const model = modelOf.get(t.profile)!;
        const price = priceOf(model);
        const counts = {
          input: n * usage.input,
          output: n * usage.output,
          cacheRead: n * usage.cacheRead,
          cacheWrite: n * usage.cacheWrite,
        };
        day.run(
          date,
          t.id,
          t.profile,
          t.credential,
          model,
          price ? priceText(price) : "",
          n,
          counts.input,
          counts.output,
          counts.cacheRead,
          counts.cacheWrite,
          costOf(price, counts) ?? 0,
        );
      }
    }
  })();

  // The audit rows themselves: 1,000,000, in batches of 500 as the writer stores them, each
  // task's requests spread over its days, oldest first.
  const builder = new AuditStore.Builder();
  let next = AuditStore.nextId(db);
  const first = next;
  const flush = () => {
    const b = builder.take();
    if (!b) return;
    AuditStore.append(db, b, next);
    next += b.n;
  };
  const order = [...tasks].sort((a, b) => a.firstDay - b.firstDay);
  db.transaction(() => {
    for (const t of order)
      for (let k = 0; k < t.requests; k++) {
        const at = now - (DAYS - 1 - t.firstDay) * dayMs + Math.floor((k / t.requests) * t.days * dayMs * 0.99) - dayMs / 2;
        const row: Row = {
          at: Math.min(at, now - 1000),
          taskId: t.id,
          taskRef: t.code ?? t.id,
          role: "agent",
          profile: t.profile,
          credential: t.credential,
          upstream: t.profile === "gpt" ? "https://api.openai.com" : "https://api.anthropic.com",
          method: "POST",
          path: t.profile === "gpt" ? "/v1/responses" : "/v1/messages",
          status: 200,
          durationMs: 1200 + k,
          ttfbMs: 400,
          bytesIn: 40_000,
          bytesOut: 3_000,
          usage: { ...usage },
          retries: 0,
          note: null,
          hop: 0,
          lazyInMs: 0.05,
          lazyOutMs: 0.02,
        };
        if (builder.add(row)) flush();
      }
    flush();
  })();
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  const rows = AuditStore.count(db);
  const requests = (db.query("SELECT SUM(requests) AS n FROM usage_days").get() as { n: number }).n;
  const taskCount = (db.query("SELECT COUNT(*) AS n FROM tasks").get() as { n: number }).n;
  db.close();
  if (next - first !== REQUESTS) throw new Error(`seeded ${next - first} audit rows, not ${REQUESTS}`);
  return { rows, tasks: taskCount, requests };
}

const stats = (xs: number[]) => `p50 ${fmt(pct(xs, 50))}, p95 ${fmt(pct(xs, 95))}`;
const median = (xs: number[]) => pct(xs, 50);

try {
  lazy("daemon", "start"); // migrates the store
  lazy("daemon", "stop");
  const state = join(home, "daemon", readdirSync(join(home, "daemon"))[0]!);
  const store = join(state, "store.db");
  const t0 = performance.now();
  const seeded = seedStore(store);
  const seedMs = performance.now() - t0;
  const copy = join(root, "copy.db");
  copyFileSync(store, copy);

  lazy("daemon", "start");
  const rt = JSON.parse(readFileSync(join(state, "daemon.json"), "utf8"));
  const token = readFileSync(join(state, "token"), "utf8").trim();
  const url = `http://127.0.0.1:${rt.api.port}/api/stats/budget`;
  // Exactly the statements report() prepares (src/spending/budget.ts), with its 30-day bound.
  const SUMS =
    "SUM(requests) AS requests, SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cache_read) AS cacheRead, SUM(cache_write) AS cacheWrite";
  const since = new Date(Date.now() - (DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
  const sql = [
    `SELECT day AS k, profile, ${SUMS} FROM usage_days WHERE day >= '${since}' GROUP BY day, profile;`,
    `SELECT task_id AS k, profile, ${SUMS} FROM usage_days WHERE task_id != '' GROUP BY task_id, profile;`,
    `SELECT profile AS k, profile, ${SUMS} FROM usage_days GROUP BY profile, profile;`,
    `SELECT credential AS k, profile, ${SUMS} FROM usage_days GROUP BY credential, profile;`,
  ].join("\n");
  const route = async () => {
    const t = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = (await res.json()) as { tasks: unknown[]; days: unknown[] };
    const ms = performance.now() - t;
    if (!res.ok || body.tasks.length !== 50)
      throw new Error(`GET /api/stats/budget answered ${res.status}: ${JSON.stringify(body).slice(0, 300)}`);
    return ms;
  };

  const shown = JSON.parse(Bun.spawnSync([BIN, "stats", "budget", "--json"], { env, cwd: root }).stdout.toString()) as {
    days: { requests: number }[];
    tasks: unknown[];
  };
  const shownRequests = shown.days.reduce((s, d) => s + d.requests, 0);
  for (let i = 0; i < 3; i++) {
    lazy("stats", "budget", "--json");
    await route();
    timeProcess(["sqlite3", copy, sql]);
  }
  const cli: number[] = [];
  const http: number[] = [];
  const sqlite: number[] = [];
  const floor: number[] = [];
  const ratios: number[] = [];
  for (let i = 0; i < rounds; i++) {
    floor.push(lazy("--version"));
    cli.push(lazy("stats", "budget", "--json"));
    http.push(await route());
    sqlite.push(timeProcess(["sqlite3", copy, sql]));
    ratios.push(cli.at(-1)! / sqlite.at(-1)!);
  }

  console.log(`budget bench, ${rounds} rounds (interleaved), ${new Date().toISOString()}`);
  console.log(
    `store: ${seeded.tasks} tasks, ${seeded.rows} audit rows, usage_days summing to ${seeded.requests} requests over ${DAYS} days (seeded in ${(seedMs / 1000).toFixed(1)} s); lazy stats budget shows ${shownRequests} requests`,
  );
  console.log(`lazy stats budget --json (whole process): ${stats(cli)}   (target: ≤ 100 ms p50)`);
  console.log(`GET /api/stats/budget (the route alone):   ${stats(http)}`);
  console.log(`sqlite3 copy.db, report()'s 4 GROUP BYs:   ${stats(sqlite)}`);
  console.log(`lazy --version (the process floor):        ${stats(floor)}`);
  console.log(
    `ratio lazy / sqlite3: ${(median(cli) / median(sqlite)).toFixed(2)}× of the medians; per round median ${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})   (target: ≤ 3×)`,
  );
} finally {
  Bun.spawnSync([BIN, "daemon", "stop"], { cwd: root, env });
  for (const d of [root, home]) rmSync(d, { recursive: true, force: true });
}
