/**
 * Attacks on the container's lifetime and bounds (issue 26, findings 3, 5 and 9): real Claude
 * Code in a real task container runs each attack as a Bash tool call (the mock provider answers
 * with a tool_use), with the passwordless sudo every agent has; one attack is a hostile local
 * process. Each test asserts what a user would see: nothing of the agent's runs after its turn
 * (a detached loop, a harness whose supervisor was killed), its placeholder and MCP token answer
 * 401 naming why, a host grant dies with its process, a turn killed before its transcript was
 * saved does not doom the next, a fork bomb or a memory hog stops at its container's bounds while
 * the daemon answers (and lazy stop still works), and a flood of events does not grow the store
 * past its bound.
 * Needs a real Docker engine (CI starts one).
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { containerProject, launched, launchedStatus, settled } from "../helpers/fixtures";
import { cleanupAll, never, type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-LIFETIMEATTACK-" + "l".repeat(65) + "AA";
/** The memory bound the attacks run under (the default is half the host's memory). */
const MEMORY = 1024 ** 3;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = await containerProject(anthropic, KEY, { container: `\n[container.limits]\nmemory = "1g"\n` });
}, 120_000);

afterAll(() => cleanupAll(anthropic));

async function task(ref: string): Promise<{ id: string; status: string }> {
  // The API `lazy task show` calls (a task with 10,000 events makes a large answer).
  return (await p.api("GET", `/api/tasks/${ref}`)).task;
}
/** The status a task's turn ended in. */
const settledStatus = async (ref: string, timeoutMs?: number): Promise<string> => (await settled(p, ref, timeoutMs)).task.status;
/** The agent's next turn runs this command as a Bash tool call. */
function agentRuns(command: string): void {
  anthropic.answer({ text: "done.", toolUse: { name: "Bash", input: { command, description: "probe" } } });
}
function container(ref: string, id: string): { Id: string; State: { Running: boolean }; HostConfig: Record<string, unknown> } {
  const ids = sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root} --filter label=dev.lazy.task=${id}`)
    .out.split("\n")
    .filter(Boolean);
  expect(ids, `task ${ref}'s container`).toHaveLength(1);
  return JSON.parse(sh("/", `docker inspect ${ids[0]}`).out)[0];
}
/** A file the agent wrote in its home folder (mounted from the task's state), read on the host. */
const fromHome = (id: string, name: string) => {
  const f = join(p.stateDir, "tasks", id, "home", name);
  return existsSync(f) ? readFileSync(f, "utf8").trim() : undefined;
};

describe("the agent's processes end with its turn", () => {
  test("a setsid nohup loop calling the proxy is gone when its turn ends: no process left, no request reaches the provider, its placeholder and MCP token answer 401 naming why", async () => {
    // The loop: a detached process asking the model every 200 ms with the turn's placeholder.
    const loop = `setInterval(()=>fetch(process.env.ANTHROPIC_BASE_URL+'/v1/messages',{method:'POST',headers:{'x-api-key':process.env.ANTHROPIC_API_KEY,'content-type':'application/json','anthropic-version':'2023-06-01'},body:JSON.stringify({model:'loop-probe',max_tokens:1,messages:[{role:'user',content:'loop-probe'}]})}).catch(()=>{}),200)`;
    agentRuns(`echo "$ANTHROPIC_API_KEY" > /lazy/home/placeholder; setsid nohup node -e "${loop}" >/dev/null 2>&1 < /dev/null & sleep 3`);
    expect(await launchedStatus(p, "loop", "leave a loop behind")).toBe("done");
    const ended = Date.now();
    const t = await task("loop");
    // The loop's own requests (Claude Code's carry the command, loop-probe included, in their history).
    const fromLoop = () => anthropic.received.filter((r) => r.body.includes('"model":"loop-probe"'));
    // The loop ran and reached the provider during the turn (the attack is real)...
    expect(fromLoop().length).toBeGreaterThan(0);
    // ...and nothing of the agent's runs now: its container is stopped, checked from the engine.
    const c = container("loop", t.id);
    expect(c.State.Running).toBe(false);
    expect(sh("/", `docker top ${c.Id}`).code).not.toBe(0);
    await never(() => fromLoop().filter((r) => r.at > ended).length, 3_000, "a request of the loop after the turn ended");
    expect(fromLoop().filter((r) => r.at > ended)).toEqual([]);

    // Its placeholder, presented from anywhere, is refused, naming why.
    const placeholder = fromHome(t.id, "placeholder");
    expect(placeholder).toStartWith("sk-ant-api03-");
    const before = anthropic.received.length;
    const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": placeholder!, "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 1, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("task loop has no running turn");
    // So is its MCP token.
    const tokens = JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens as {
      token: string;
      taskId?: string;
    }[];
    const mcp = tokens.find((x) => x.taskId === t.id)!;
    const m = await fetch(`${p.runtimeProxyUrl()}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${mcp.token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(m.status).toBe(401);
    expect(await m.text()).toContain("task loop has no running turn");
    expect(anthropic.received.length).toBe(before);

    // The next turn starts the same container again: what the agent left on its disk is there.
    agentRuns("test -s /lazy/home/placeholder && echo kept > kept.txt");
    await p.ok(["send", "loop", "go on"]);
    expect(await settledStatus("loop")).toBe("done");
    expect(container("loop", t.id).Id).toBe(c.Id);
    expect(fromLoop().filter((r) => r.at > ended)).toEqual([]);
  }, 600_000);
});

describe("a turn whose supervisor is killed", () => {
  test("ends as failed with its harness stopped: the harness asks the provider nothing after the turn's end", async () => {
    // The harness goes on after the tool call (its next model request comes ~5 s later).
    agentRuns("sudo pkill -KILL -f 'supervise --[t]urn'; sleep 5; echo late");
    expect(await launchedStatus(p, "orphan", "orphan the harness")).toBe("failed");
    const ended = Date.now();
    const t = await task("orphan");
    expect(container("orphan", t.id).State.Running).toBe(false);
    await never(() => anthropic.received.filter((r) => r.at > ended).length, 8_000, "a model request after the turn failed");
    expect(anthropic.received.filter((r) => r.at > ended)).toEqual([]);
  }, 600_000);
});

describe("a host grant lives with its process", () => {
  test("a lazy chat's placeholder, replayed by a local process after the chat ended, answers 401 naming why; none without a pid", async () => {
    // The host process a chat or pair would be: the grant is minted for it, then it ends.
    const chat = Bun.spawn(["sleep", "60"]);
    try {
      const g = await p.grant({ role: "host", profile: "claude", pid: chat.pid });
      const ask = () =>
        fetch(`${g.proxyUrl}/v1/messages`, {
          method: "POST",
          headers: { "x-api-key": g.placeholder, "content-type": "application/json", "anthropic-version": "2023-06-01" },
          body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 1, messages: [{ role: "user", content: "host-probe" }] }),
        });
      anthropic.answer({ text: "hi" });
      expect((await ask()).status).toBe(200);
      chat.kill("SIGKILL");
      await chat.exited;
      const res = await until(
        async () => {
          const r = await ask();
          return r.status === 401 ? r : undefined;
        },
        15_000,
        "the host placeholder to stop redeeming",
      );
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        "lazy chat or lazy pair it was given to has ended",
      );
      // Within the bounded wait above, and for good: nothing more reaches the provider.
      const reached = anthropic.received.filter((r) => r.body.includes("host-probe")).length;
      for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(401);
      expect(anthropic.received.filter((r) => r.body.includes("host-probe"))).toHaveLength(reached);
      // A host grant asked for with no process to live with is refused at once.
      await expect(p.grant({ role: "host", profile: "claude", pid: null })).rejects.toThrow("needs the pid");
    } finally {
      chat.kill();
    }
  }, 60_000);
});

describe("a turn killed from inside", () => {
  test("an agent that kills its container before its transcript is saved does not fail every later turn", async () => {
    // What a turn killed under load leaves (the flaky gitdir-swap test): no transcript for the
    // session lazy recorded. Claude Code's --resume of it fails ("No conversation found").
    // (After a pause: Claude Code writes its transcript while the tool starts, and a write that
    // lands after the rm would bring the transcript back.)
    agentRuns("sleep 2; rm -rf /lazy/harness/projects; sudo pkill -KILL -f 'supervise --[i]dle'");
    expect(await launchedStatus(p, "die-young", "die young")).toBe("failed");
    const t = await task("die-young");
    expect(container("die-young", t.id).State.Running).toBe(false);
    agentRuns("echo again > again.txt");
    await p.ok(["send", "die-young", "go on"]);
    expect(await settledStatus("die-young")).toBe("done");
    const events = (await p.api("GET", `/api/tasks/${t.id}`)).events as { kind: string; data: { reason?: string } }[];
    expect(events.some((e) => e.kind === "refused" && e.data.reason?.includes("left no transcript"))).toBe(true);
  }, 600_000);
});

describe("bounded containers", () => {
  test("a fork bomb stops at the container's pids limit; the daemon answers every lazy task list throughout, the bomb's task in it", async () => {
    // The bomb starts a second after the tool call, which then waits while it runs (until lazy stop).
    agentRuns(`(sleep 1; exec bash -c ':(){ :|:& };:') >/dev/null 2>&1 < /dev/null & sleep 25; echo survived > /lazy/home/after-bomb`);
    await launched(p, "bomb", "fork bomb");
    const t = await task("bomb");
    const c = await until(
      () => {
        const ids = sh("/", `docker ps -q --no-trunc --filter label=dev.lazy.task=${t.id}`).out.trim();
        return ids || undefined;
      },
      120_000,
      "the bomb's container",
    );
    const info = container("bomb", t.id);
    expect(info.HostConfig.PidsLimit).toBe(1024);
    expect(info.HostConfig.Memory).toBe(MEMORY);
    expect(info.HostConfig.MemorySwap).toBe(MEMORY);
    expect(info.HostConfig.NanoCpus).toBeGreaterThan(0);
    // Wait for the bomb to fill its container (cgroup v1 or v2, cgroupfs or systemd driver).
    const pidsFile = [
      `/sys/fs/cgroup/pids/docker/${c}/pids.current`,
      `/sys/fs/cgroup/system.slice/docker-${c}.scope/pids.current`,
      `/sys/fs/cgroup/docker/${c}/pids.current`,
    ].find(existsSync);
    expect(pidsFile, "the container's pids cgroup").toBeDefined();
    // 0 once the container is gone (its cgroup with it).
    const pids = () => (existsSync(pidsFile!) ? Number(readFileSync(pidsFile!, "utf8")) : 0);
    await until(() => pids() >= 900 || undefined, 30_000, "the fork bomb to fill its container");

    // Over the bomb's life, the daemon answers what a person asks (its API, and the whole CLI),
    // with the bomb's task in the list. How fast is bench/forkbomb.ts's figure, never asserted here.
    let peak = 0;
    // The bomb lives until the turn ends (the Bash call's sleep; sooner if it takes the harness down).
    let during = 0;
    for (let i = 0; i < 20; i++) {
      if (pids() >= 900) during++;
      const list = await p.api<{ id: string; status: string }[]>("GET", "/api/tasks");
      expect(list.find((x) => x.id === t.id)?.status).toBeDefined();
      expect((await p.ok(["task", "list"])).stdout).toContain("bomb");
      peak = Math.max(peak, pids());
      await Bun.sleep(400);
    }
    expect(during).toBeGreaterThanOrEqual(5);
    // The limit holds: never more processes than it allows.
    expect(peak).toBeGreaterThanOrEqual(900);
    expect(peak).toBeLessThanOrEqual(1024);

    // lazy stop ends the turn, though no process can start in the container to signal the
    // harness (lazy then stops the container whole); the bomb ends with it.
    const stopping = (await task("bomb")).status === "running";
    if (stopping) await p.ok(["stop", "bomb"]);
    const end = await settledStatus("bomb", 60_000);
    expect(stopping ? ["waiting"] : ["done", "failed"]).toContain(end);
    expect(container("bomb", t.id).State.Running).toBe(false);
    expect(pids()).toBe(0);
  }, 600_000);

  test("a memory hog is killed inside its container; the daemon and the turn go on", async () => {
    const daemon = p.runtime()!.pid;
    agentRuns(`node -e 'const a=[];for(;;)a.push(Buffer.alloc(64*1024*1024).fill(1))' >/dev/null 2>&1; echo $? > /lazy/home/hog-exit`);
    expect(await launchedStatus(p, "hog", "memory hog")).toBe("done");
    const t = await task("hog");
    // SIGKILL from the kernel's OOM killer inside the container's 1 GiB (137 = 128 + 9).
    expect(fromHome(t.id, "hog-exit")).toBe("137");
    expect(p.runtime()!.pid).toBe(daemon);
    expect(() => process.kill(daemon, 0)).not.toThrow();
    expect((await p.api<unknown[]>("GET", "/api/tasks")).length).toBeGreaterThan(0);
  }, 600_000);

  test("a huge events.jsonl does not grow the store past the turn's bound; lazy records what it dropped", async () => {
    const store = () =>
      ["store.db", "store.db-wal"].map((f) => join(p.stateDir, f)).reduce((n, f) => n + (existsSync(f) ? statSync(f).size : 0), 0);
    const before = store();
    // 200 MB of well-formed event lines, written straight into the turn's events file.
    agentRuns(
      `yes '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"flood flood flood flood flood"}]}}' | head -c 200000000 >> /lazy/turns/1/events.jsonl; sleep 1`,
    );
    expect(await launchedStatus(p, "flood", "event flood")).toBe("done");
    const t = await task("flood");
    // What is stored reads back whole (a --json answer this large was once cut short on a pipe).
    const shown = await p.json(["task", "show", "flood"]);
    expect(shown.events.length).toBeGreaterThan(10_000);
    const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
    try {
      const rows = db.query("SELECT data FROM events WHERE task_id = ? AND kind = 'dropped'").all(t.id) as { data: string }[];
      expect(rows).toHaveLength(1);
      const dropped = JSON.parse(rows[0]!.data) as { events: number; bytes: number; reason: string };
      expect(dropped.events).toBeGreaterThan(0);
      expect(dropped.bytes).toBeGreaterThan(100_000_000);
      expect(dropped.reason).toContain("10000 events");
      const stored = (db.query("SELECT count(*) AS n FROM events WHERE task_id = ?").get(t.id) as { n: number }).n;
      expect(stored).toBeLessThan(10_100);
    } finally {
      db.close();
    }
    expect(store() - before).toBeLessThan(32 * 1024 * 1024);
  }, 600_000);
});
