/**
 * lazy's own calls under attack: the warm call container and the call containers' addresses,
 * which redeem the project's call placeholder (role lazy). Docker hands a freed address to the
 * next container on the network at once, so an address must stop redeeming the placeholder as
 * soon as its container is gone; a warm container that died must make the next call fall back
 * to a cold one, not fail; no call container outlives the daemon, nor its folder.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { dockerAnthropic } from "../helpers/fixtures";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-HOSTILECALLS-" + "h".repeat(68) + "AA";
let anthropic: Mock.MockProvider;
const mine: string[] = []; // containers this test made itself

const toml = () => `[container]\nbase = "${TEST_IMAGES.node}"\n\n[proxy.upstreams]\nanthropic = "${anthropic.url}"\n`;

async function project(env: Record<string, string> = {}): Promise<Project> {
  const p = new Project({ toml: toml(), env });
  sh(p.root, "git -c user.name=Dev -c user.email=dev@example.com commit -q --allow-empty -m init");
  await p.setCredential("anthropic", KEY);
  return p;
}

/** A project's call containers (running or not, unless `up`). */
const calls = (p: Project, up = false) =>
  sh("/", `docker ps -${up ? "" : "a"}q --no-trunc --filter label=dev.lazy.root=${p.root} --filter name=-call-`)
    .out.split("\n")
    .filter(Boolean);
const ipOf = (id: string) => sh("/", `docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' ${id}`).out.trim();
const cmdlines = (id: string) => sh("/", `docker exec ${id} sh -c 'cat /proc/*/cmdline | tr "\\\\0" " "'`).out;
const environ = (id: string) => sh("/", `docker exec ${id} sh -c 'cat /proc/*/environ 2>/dev/null | tr "\\\\0" "\\\\n"'`).out;

/** The one warm call container, its harness started and waiting for a prompt (a call first, when there is none). */
async function warm(p: Project): Promise<string> {
  if (!calls(p, true).length) {
    anthropic.reset();
    await p.ok(["ask", "warm up?"]);
  }
  return until(
    () => {
      const ids = calls(p, true);
      return ids.length === 1 && cmdlines(ids[0]!).includes("--input-format stream-json") ? ids[0] : undefined;
    },
    120_000,
    "the warm call container",
  );
}

/**
 * Present a placeholder to lazy's proxy from container `id`: the status and body. Not spawnSync:
 * the mock provider answers on this process's event loop.
 */
async function present(id: string, base: string, placeholder: string): Promise<string> {
  const js = `fetch('${base}/v1/messages',{method:'POST',headers:{'x-api-key':'${placeholder}','anthropic-version':'2023-06-01','content-type':'application/json'},body:JSON.stringify({model:'claude-sonnet-4-5',max_tokens:5,messages:[{role:'user',content:'hi'}]}),signal:AbortSignal.timeout(20000)}).then(async r=>console.log(r.status, await r.text()),e=>console.log('failed', e.message))`;
  const p = Bun.spawn(["bash", "-c", `docker exec ${id} node -e "${js}"`], { stdout: "pipe", stderr: "pipe" });
  return await new Response(p.stdout).text();
}

/** A plain container on the project's network (a stand-in for any other container there). */
function stranger(net: string): string {
  const name = `atk-owncalls-${Math.random().toString(36).slice(2, 8)}`;
  const id = sh("/", `docker run -d --name ${name} --network ${net} ${TEST_IMAGES.node} sleep 600`).out.trim();
  mine.push(id);
  return id;
}

beforeAll(async () => {
  anthropic = await dockerAnthropic();
});
afterAll(async () => {
  if (mine.length) sh("/", `docker rm -f ${mine.join(" ")}`);
  await cleanupAll();
  await anthropic?.close();
});

describe("the warm call container, attacked", () => {
  let p: Project;
  beforeAll(async () => {
    p = await project();
  }, 600_000);

  test("the warm container, redeeming nothing while it waits, answers the next call itself", async () => {
    const w = await warm(p);
    anthropic.reset();
    anthropic.reply = { text: "Warm answer." };
    const r = await p.run(["ask", "warm?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Warm answer.");
    expect(sh("/", `docker ps -aq --filter id=${w}`).out.trim()).toBe("");
    expect(p.log()).not.toContain("the warm container for lazy's own calls had ended");
    const audit = await p.json(["stats", "audit"]);
    expect(audit.rows.filter((x: any) => x.status === 401)).toEqual([]);
    // Nor a refusal counted (a placeholder that does not redeem is counted, not a row).
    expect(audit.refused.filter((x: any) => x.status === 401)).toEqual([]);
  }, 600_000);

  test("a dead warm container's address no longer redeems the project's call placeholder; the next call falls back", async () => {
    anthropic.reset();
    anthropic.reply = { text: "First." };
    await p.ok(["ask", "first?"]);
    const w = await warm(p);
    const wIp = ipOf(w);
    const env = environ(w);
    const placeholder = env.match(/^ANTHROPIC_API_KEY=(.+)$/m)![1]!;
    const base = env.match(/^ANTHROPIC_BASE_URL=(.+)$/m)![1]!;
    expect(placeholder).not.toBe(KEY);
    const net = JSON.parse(sh("/", `docker inspect ${w}`).out)[0].HostConfig.NetworkMode as string;
    // From another container on the network, while the warm one lives: refused.
    const other = stranger(net);
    expect(await present(other, base, placeholder)).toStartWith("401");

    // The warm container dies (OOM, a user's docker kill): Docker gives its address to the next
    // container on the network, which must not inherit the placeholder.
    sh("/", `docker kill ${w}`);
    let heir: string | undefined;
    for (let i = 0; i < 4 && !heir; i++) {
      const c = stranger(net);
      if (ipOf(c) === wIp) heir = c;
    }
    expect(heir, `no container got the dead warm container's address ${wIp}`).toBeTruthy();
    anthropic.reset();
    const got = await present(heir!, base, placeholder);
    expect(got, `mock saw ${anthropic.received.length} request(s)`).toStartWith("401");
    expect(got).toContain("was presented from");
    expect(anthropic.received.filter((x) => x.method === "POST")).toEqual([]);

    // The next call does not take the dead one: it runs cold and answers.
    anthropic.reset();
    anthropic.reply = { text: "Fell back." };
    const r = await p.run(["ask", "still there?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Fell back.");
    sh("/", `docker rm -f ${mine.splice(0).join(" ")}`);
  }, 600_000);

  test("a warm container whose harness died (the container still up) is not taken: the call falls back", async () => {
    const w = await warm(p);
    // The supervisor of the waiting turn dies with its harness; no exit.json is written.
    sh(
      "/",
      `docker exec -u 0 ${w} sh -c 'for d in /proc/[0-9]*; do if tr "\\\\0" " " < $d/cmdline 2>/dev/null | grep -q "supervise --turn"; then kill -9 \${d#/proc/}; fi; done'`,
    );
    await until(() => !cmdlines(w).includes("supervise --turn") || undefined, 30_000, "the supervisor to die");
    expect(sh("/", `docker inspect -f '{{.State.Running}}' ${w}`).out.trim()).toBe("true");
    anthropic.reset();
    anthropic.reply = { text: "Cold answer." };
    const r = await p.run(["ask", "anyone home?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("Cold answer.");
  }, 600_000);

  test("lazy ask reads git's state without writing the checkout's index (no index.lock racing the user's git)", async () => {
    sh(p.root, "echo a > tracked.txt && git add tracked.txt && git -c user.name=Dev -c user.email=dev@example.com commit -qm tracked");
    await Bun.sleep(1100);
    sh(p.root, "touch tracked.txt"); // same content, new mtime: a status would refresh the index
    const before = statSync(join(p.root, ".git/index")).mtimeMs;
    anthropic.reset();
    anthropic.reply = { text: "Clean." };
    const r = await p.run(["ask", "anything uncommitted?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(statSync(join(p.root, ".git/index")).mtimeMs).toBe(before);
  }, 600_000);

  test("a daemon killed with its warm container up: the next daemon removes the container and its folder", async () => {
    const w = await warm(p);
    const id = sh("/", `docker inspect -f '{{.Name}}' ${w}`).out.trim().split("-call-")[1]!;
    const folder = join(p.stateDir, "calls", id);
    expect(existsSync(folder)).toBe(true);
    process.kill(p.runtime()!.pid, "SIGKILL");
    await p.ok(["task", "list"]); // a new daemon
    await until(() => sh("/", `docker ps -aq --filter id=${w}`).out.trim() === "" || undefined, 60_000, "the orphan to go");
    await until(() => !existsSync(folder) || undefined, 60_000, `${folder} to go`);
    expect(readdirSync(join(p.stateDir, "calls"))).toEqual([]);
  }, 600_000);
});

describe("a call container that goes away mid-call", () => {
  let q: Project;
  beforeAll(async () => {
    q = await project({ LAZY_WARM_CALLS: "0" });
  }, 600_000);

  /** Start a call the model takes its time over; the call's container, once its request is in. */
  async function slowCall(): Promise<{ asking: Promise<{ code: number; stderr: string }>; id: string }> {
    anthropic.reset();
    anthropic.reply = { text: "Too late." };
    anthropic.behavior = { kind: "silent-then-stream", firstByteDelayMs: 300_000, gapMs: 0 };
    const asking = q.run(["ask", "take your time"]);
    await until(() => anthropic.received.some((x) => x.method === "POST") || undefined, 180_000, "the call's model request");
    const ids = calls(q);
    expect(ids).toHaveLength(1);
    return { asking, id: ids[0]! };
  }

  test("removed by someone else: the ask fails at once, naming the container", async () => {
    const { asking, id } = await slowCall();
    sh("/", `docker rm -f ${id}`);
    const r = await Promise.race([asking, Bun.sleep(60_000).then(() => ({ code: -1, stderr: "still waiting after 60 s" }))]);
    anthropic.behavior = { kind: "ok" };
    expect(r.code).not.toBe(-1);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("was stopped or removed outside lazy");
  }, 600_000);

  test("lazy daemon stop during a call removes the call's container; the ask says the daemon stopped, and is not asked again", async () => {
    const { asking, id } = await slowCall();
    await q.ok(["daemon", "stop"]);
    // Gone when the stop returns, not when some later daemon's housekeeping gets to it.
    expect(sh("/", `docker ps -aq --filter id=${id}`).out.trim()).toBe("");
    expect(calls(q)).toEqual([]);
    anthropic.behavior = { kind: "ok" };
    const r = await asking;
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("lazy's daemon stopped during the call");
    expect(anthropic.received.filter((x) => x.method === "POST")).toHaveLength(1);
    expect(q.runtime()).toBeUndefined(); // the CLI started no daemon to ask again
  }, 600_000);
});
