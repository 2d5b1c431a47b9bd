/**
 * lazy's main job for real: a task's agent (real Claude Code, Codex, Pi from npm, in lazy's
 * default image built here from a local base) runs in its own container on its own worktree,
 * reaches the mock provider only through the proxy, and its commit lands on the task's
 * branch, then on the main branch when accepted. Needs a real Docker engine (CI starts one).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TEST_IMAGES } from "../helpers/env";
import { codexProject, commits, hanging, inFlight, launched, startsOk, teardown } from "../helpers/fixtures";
import { isAlive, Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-REALCONTAINER-" + "w".repeat(68) + "AA";
const OPENAI_KEY = "sk-proj-REALCONTAINER-" + "v".repeat(40);
let anthropic: Mock.MockProvider;
let openai: Mock.MockProvider;
let p: Project;

const docker = (args: string) => sh("/", `docker ${args}`);

beforeAll(async () => {
  ({ anthropic, openai, p } = await codexProject(KEY, OPENAI_KEY, {
    container: 'setup = "echo setup-ran > .setup-marker"',
    ignore: [".env", "lazy.toml"],
    files: (root) => {
      writeFileSync(join(root, ".env"), "SECRET_FROM_ENV_FILE=1\n");
      writeFileSync(join(root, ".worktreeinclude"), ".env\n");
    },
  }));
}, 120_000);
afterAll(() => teardown(p, anthropic, openai));

/**
 * A task of this profile whose first turn has finished, made by whichever test needs it first
 * (a test that made it itself, with its own assertions, leaves it for the others): every test
 * runs alone (bun test -t) as well as in order.
 */
const made = new Map<string, Promise<any>>();
function finishedTask(code: string, profile: "claude" | "codex" | "pi"): Promise<any> {
  let m = made.get(code);
  if (!m) {
    m = (async () => {
      const existing = (await p.json(["task", "list"])).find((t: any) => t.code === code);
      if (existing && existing.status !== "queued" && existing.status !== "running") return existing;
      anthropic.reply = { text: "ok." };
      openai.reply = { text: "ok." };
      if (!existing)
        await p.ok(["task", "add", `Say ok (${code})`, "--code", code, ...(profile === "claude" ? [] : ["--profile", profile])]);
      await p.ok(["start", code]);
      const t = await waitStatus(code);
      expect(t.status).toBe("done");
      return t;
    })();
    made.set(code, m);
  }
  return m;
}

async function waitStatus(ref: string, timeoutMs = 600_000): Promise<any> {
  return until(
    async () => {
      const t = (await p.json(["task", "show", ref])).task;
      return t.status !== "running" && t.status !== "queued" ? t : undefined;
    },
    timeoutMs,
    `task ${ref} to finish its turn`,
  );
}

describe("a task in its container", () => {
  test("real Claude Code runs a Bash tool_use that commits; done; the commit is on the task's branch; accept merges it", async () => {
    anthropic.answer(commits("hello.txt", "hello\\n", "I committed hello.txt.", "cat .env"));
    await p.ok(["task", "add", "Add hello.txt and commit it", "--code", "add-hello"]);
    await startsOk(p, "add-hello");
    const t = await waitStatus("add-hello");
    expect(t.status).toBe("done");
    const log = (await p.ok(["logs", "add-hello"])).stdout;
    expect(log).toContain("[Bash]");
    expect(log).toContain("I committed hello.txt.");
    // The setup command ran before the first turn.
    const all = (await p.json(["task", "show", "add-hello"])).events;
    expect(all.some((e: any) => e.kind === "setup" && e.data.code === 0)).toBe(true);
    // The commit is on lazy/add-hello, not on main.
    expect(sh(p.root, "git log --format=%s lazy/add-hello -1").out.trim()).toBe("add hello.txt");
    expect(sh(p.root, "git log --format=%s main -1").out.trim()).toBe("init");
    // Through the proxy only, with the real key; a placeholder never reached the provider.
    expect(anthropic.received.length).toBeGreaterThanOrEqual(2);
    for (const r of anthropic.received) {
      if (r.method === "POST") expect(r.headers["x-api-key"]).toBe(KEY);
      expect(JSON.stringify(r.headers) + r.body).not.toContain("sk-ant-api03-lazy-");
    }
    // The tool result carried .env's content: .worktreeinclude copied it into the worktree.
    expect(anthropic.received.some((r) => r.body.includes("SECRET_FROM_ENV_FILE=1"))).toBe(true);

    const acceptedGrant = await p.grant({ role: "agent", task: "add-hello" });
    const acc = await p.json(["accept", "add-hello"]);
    const after = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": acceptedGrant.placeholder },
      body: "{}",
    });
    expect(after.status).toBe(401);
    expect(acc.commits).toHaveLength(1);
    expect(acc.commits[0]).toContain("add hello");
    expect(sh(p.root, "git log --format=%s main").out).toContain("add hello");
    expect(existsSync(join(p.root, "hello.txt"))).toBe(true);
    expect((await p.json(["task", "show", "add-hello"])).events.some((e: any) => e.kind === "summary")).toBe(true);
  }, 900_000);

  test("the same turn (a reply, no tool) with real Codex and with real Pi; their config files are rewritten between turns", async () => {
    openai.answer({ text: "Codex says hello." });
    await launched(p, "codex-hello", "Say hello", "--profile", "codex");
    const t = await waitStatus("codex-hello");
    expect(t.status).toBe("done");
    expect((await p.ok(["logs", "codex-hello"])).stdout).toContain("Codex says hello.");
    expect(openai.received.some((r) => r.path === "/v1/responses" && r.headers.authorization === `Bearer ${OPENAI_KEY}`)).toBe(true);
    const taskId = t.id;
    const codexConfig = () => readFileSync(join(p.stateDir, "tasks", taskId, "harness", "config.toml"), "utf8");
    expect(codexConfig()).toContain('model = "gpt-5"');

    // A change to the profile shows in the second turn's config.
    const before = (await p.json(["daemon", "status"])).config.loadedAt;
    p.writeToml(readFileSync(join(p.root, "lazy.toml"), "utf8").replace('model = "gpt-5"', 'model = "gpt-5-mini"'));
    await until(async () => (await p.json(["daemon", "status"])).config.loadedAt !== before, 10_000, "the daemon to reload lazy.toml");
    await p.ok(["send", "codex-hello", "once more"]);
    expect((await waitStatus("codex-hello")).status).toBe("done");
    expect(codexConfig()).toContain('model = "gpt-5-mini"');
    expect(openai.received.filter((r) => r.path === "/v1/responses").at(-1)!.body).toContain('"gpt-5-mini"');

    anthropic.answer({ text: "Pi says hello." });
    await launched(p, "pi-hello", "Say hello", "--profile", "pi");
    const tp = await waitStatus("pi-hello");
    expect(tp.status).toBe("done");
    expect((await p.ok(["logs", "pi-hello"])).stdout).toContain("Pi says hello.");
    const piModels = () => JSON.parse(readFileSync(join(p.stateDir, "tasks", tp.id, "harness", "models.json"), "utf8"));
    expect(piModels().providers.anthropic.baseUrl).toMatch(/^http:\/\/[\d.]+:\d+$/);
    expect(piModels().providers.anthropic.models).toBeUndefined();
    // A model set on the pi profile shows in the second turn's models.json and request.
    const loaded = (await p.json(["daemon", "status"])).config.loadedAt;
    p.writeToml(readFileSync(join(p.root, "lazy.toml"), "utf8") + `\n[profiles.pi]\nmodel = "pi-second-model"\n`);
    await until(async () => (await p.json(["daemon", "status"])).config.loadedAt !== loaded, 10_000, "the daemon to reload lazy.toml");
    await p.ok(["send", "pi-hello", "again"]);
    expect((await waitStatus("pi-hello")).status).toBe("done");
    expect(piModels().providers.anthropic.models[0].id).toBe("pi-second-model");
    expect(JSON.parse(anthropic.received.filter((r) => r.method === "POST").at(-1)!.body).model).toBe("pi-second-model");
    for (const r of [...anthropic.received, ...openai.received])
      expect(JSON.stringify(r.headers) + r.body).not.toMatch(/sk-(ant-api03|proj)-lazy-/);
  }, 900_000);

  test("the real credential appears nowhere a container can see", async () => {
    const t = await finishedTask("codex-hello", "codex");
    const name = `lazy-${p.stateDir.split("/").at(-1)}-${t.id}`;
    const inspect = docker(`inspect ${name}`);
    expect(inspect.code).toBe(0);
    // No Docker socket, no privileged mode; labelled with project and task; lazy's binary read-only.
    const spec = JSON.parse(inspect.out)[0];
    expect(spec.HostConfig.Privileged).toBe(false);
    expect(JSON.stringify(spec.Mounts)).not.toContain("docker.sock");
    expect(spec.Config.Labels["dev.lazy.task"]).toBe(t.id);
    expect(spec.Config.Labels["dev.lazy.project"]).toBe(p.stateDir.split("/").at(-1));
    expect(spec.Mounts.find((m: any) => m.Destination === "/lazy/bin/lazy").RW).toBe(false);
    // The repository's git folder (lazy's view of it) read-only; the checkout itself not at all.
    expect(spec.Mounts.find((m: any) => m.Destination === `${p.root}/.git`).RW).toBe(false);
    expect(spec.Mounts.some((m: any) => m.Destination === p.root)).toBe(false);
    expect(spec.Config.User).not.toMatch(/^0(:|$)/);
    // The turn ended, so its container was stopped; started again here to look inside.
    expect(spec.State.Running).toBe(false);
    expect(docker(`start ${name}`).code).toBe(0);
    expect(docker(`exec ${name} true`).code).toBe(0);
    for (const secret of [KEY, OPENAI_KEY]) {
      expect(inspect.out).not.toContain(secret);
      expect(docker(`exec ${name} env`).out).not.toContain(secret);
      expect(docker(`exec ${name} ps auxww`).out).not.toContain(secret);
      expect(docker(`logs ${name}`).out).not.toContain(secret);
      expect(sh("/", `grep -rl -- '${secret}' ${p.stateDir}/worktrees ${p.stateDir}/tasks ${p.root} 2>/dev/null`).out).toBe("");
      const image = JSON.parse(inspect.out)[0].Config.Image;
      expect(docker(`history --no-trunc ${image}`).out).not.toContain(secret);
      expect(docker(`run --rm --entrypoint sh ${image} -c "grep -rl -- '${secret}' /usr /etc /home /root 2>/dev/null; true"`).out).toBe("");
    }
  }, 120_000);

  test("from inside a task container: another branch's ref, .git/config, .git/hooks and another task's worktree are out of reach", async () => {
    const t = await finishedTask("codex-hello", "codex");
    await finishedTask("pi-hello", "pi");
    const name = `lazy-${p.stateDir.split("/").at(-1)}-${t.id}`;
    const other = join(p.stateDir, "worktrees", "pi-hello");
    const mine = join(p.stateDir, "worktrees", "codex-hello");
    const inside = (cmd: string) => docker(`exec -w ${mine} ${name} sh -c "${cmd.replace(/"/g, '\\"')}"`);
    // The turn ended, so its container was stopped; started again here (as the next turn would).
    expect(docker(`start ${name}`).code).toBe(0);
    expect(inside("true").code).toBe(0);
    const mainBefore = sh(p.root, "git rev-parse main").out.trim();
    expect(inside("git branch -f main HEAD").code).not.toBe(0);
    expect(inside("git update-ref refs/heads/main HEAD").code).not.toBe(0);
    expect(inside("git config core.hooksPath /tmp").code).not.toBe(0);
    expect(inside(`echo x >> ${p.root}/.git/config`).code).not.toBe(0);
    expect(inside(`echo 'echo pwned' > ${p.root}/.git/hooks/pre-commit`).code).not.toBe(0);
    expect(inside(`sudo sh -c 'echo x >> ${p.root}/.git/config'`).code).not.toBe(0);
    expect(inside(`echo x > ${other}/x.txt`).code).not.toBe(0);
    expect(inside(`echo x > ${p.root}/README.md`).code).not.toBe(0);
    expect(sh(p.root, "git rev-parse main").out.trim()).toBe(mainBefore);
    expect(readFileSync(join(p.root, ".git/config"), "utf8")).not.toContain("hooksPath");
    expect(existsSync(join(p.root, ".git/hooks/pre-commit"))).toBe(false);
    // Its own branch it can move, and the agent can install packages with sudo.
    expect(inside("git commit -q --allow-empty -m mine && git log --format=%s -1").out.trim()).toBe("mine");
    expect(inside("sudo -n true && id -u").out.trim()).not.toBe("0");
  }, 120_000);

  test("a placeholder replayed from a second container gets a 401, counted with its cause", async () => {
    const t = await finishedTask("pi-hello", "pi");
    const name = `lazy-${p.stateDir.split("/").at(-1)}-${t.id}`;
    const env = readFileSync(join(p.stateDir, "tasks", t.id, "harness", "models.json"), "utf8");
    const base = JSON.parse(env).providers.anthropic.baseUrl;
    const g = await p.grant({ role: "agent", task: "pi-hello", profile: "pi" });
    const net = JSON.parse(docker(`inspect ${name}`).out)[0].HostConfig.NetworkMode;
    const thief = docker(
      `run --rm --network ${net} ${TEST_IMAGES.node} node -e "fetch('${base}/v1/messages',{method:'POST',headers:{'x-api-key':'${g.placeholder}','content-type':'application/json'},body:'{}'}).then(async r=>console.log(r.status, await r.text()))"`,
    );
    expect(thief.out).toStartWith("401");
    expect(thief.out).toContain("was presented from");
    // Off its pin the placeholder redeems nothing: counted by source and reason, naming whose it was.
    const counted = (await p.json(["stats", "audit"])).refused.at(-1);
    expect(counted).toMatchObject({ status: 401, taskRef: "pi-hello" });
    expect(counted.reason).toContain("pinned placeholder presented from");
  }, 120_000);

  test("reject leaves main untouched; after accept or reject the grant's next request gets a 401", async () => {
    await finishedTask("reject-me", "pi");
    const accepted = await finishedTask("accept-me", "claude");
    const g = await p.grant({ role: "agent", task: "reject-me", profile: "pi" });
    const ga = await p.grant({ role: "agent", task: "accept-me" });
    const mainBefore = sh(p.root, "git rev-parse main").out.trim();
    await p.ok(["reject", "reject-me", "--yes"]);
    expect(sh(p.root, "git rev-parse main").out.trim()).toBe(mainBefore);
    expect(sh(p.root, "git rev-parse --verify --quiet lazy/reject-me").code).not.toBe(0);
    const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, { method: "POST", headers: { "x-api-key": g.placeholder }, body: "{}" });
    expect(res.status).toBe(401);
    expect((await res.json()).error.message).toContain("grant is gone");
    // After accept, the task's container is gone too, and its placeholder with it.
    await p.ok(["accept", "accept-me"]);
    expect(docker(`ps -aq --filter label=dev.lazy.root=${p.root} --filter label=dev.lazy.task=${accepted.id}`).out.trim()).toBe("");
    const after = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": ga.placeholder },
      body: "{}",
    });
    expect(after.status).toBe(401);
  }, 300_000);

  test("kill -9 of the daemon during a turn: after restart the task is reconciled, not stuck", async () => {
    await inFlight(p, anthropic, { code: "slow-one", prompt: "Be slow", reply: "Slow but done.", delayMs: 4000, timeoutMs: 120_000 });
    const pid = p.runtime()!.pid;
    process.kill(pid, "SIGKILL");
    await until(() => !isAlive(pid), 5000, "the daemon to die");
    // Reads work and start a new daemon, which reconciles the running task.
    const t = await waitStatus("slow-one", 180_000);
    expect(t.status).toBe("done");
    expect((await p.ok(["logs", "slow-one"])).stdout).toContain("Slow but done.");
    anthropic.reset();
  }, 300_000);

  test("lazy stop ends a running turn (the task waits for a human); housekeeping removes orphan containers", async () => {
    await hanging(p, anthropic, "stop-me", "Hang around");
    await p.ok(["stop", "stop-me"]);
    const t = await waitStatus("stop-me", 60_000);
    expect(t.status).toBe("waiting");
    anthropic.reset();
    const slug = p.stateDir.split("/").at(-1);
    const orphan = docker(
      `run -d --label dev.lazy.project=${slug} --label dev.lazy.task=0000dead --label dev.lazy.root=${p.root} ${TEST_IMAGES.node} sleep 300`,
    ).out.trim();
    expect(orphan).toMatch(/^[0-9a-f]{64}$/);
    await p.ok(["daemon", "restart"]);
    await until(() => docker(`inspect ${orphan}`).code !== 0, 30_000, "the orphan container to be removed");
    // The task's own container is still there: it is not an orphan.
    expect(docker(`ps -aq --filter label=dev.lazy.task=${t.id}`).out.trim()).not.toBe("");
    // Stopped with its turn: nothing of the agent's runs while the task waits.
    expect(docker(`ps -q --filter label=dev.lazy.task=${t.id}`).out.trim()).toBe("");
  }, 300_000);

  test("with the proxy unavailable, lazy start refuses with the lazy doctor pointer while lazy task list works", async () => {
    const q = new Project({ toml: `[proxy]\nbind = "192.0.2.1"\n` });
    sh(q.root, "git commit -q --allow-empty -m init");
    await q.setCredential("anthropic", KEY);
    await q.ok(["task", "add", "nothing", "--code", "no-proxy"]);
    const r = await q.run(["start", "no-proxy"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("lazy doctor");
    expect((await q.ok(["task", "list"])).stdout).toContain("no-proxy");
    expect((await q.ok(["logs", "no-proxy"])).code).toBe(0);
    const run = await q.run(["run", "do nothing"]);
    expect(run.code).toBe(6);
    expect((await q.run(["doctor"])).stdout).toMatch(/FAIL\s+proxy/);
  }, 60_000);
});
