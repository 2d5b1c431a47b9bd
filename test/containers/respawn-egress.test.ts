/**
 * A daemon that comes back keeps the egress proxy where running containers were told it is:
 * their HTTP_PROXY names the egress port they were started with, and the network fence lets
 * only the current ones through. Here that port is not the first one the egress proxy tries
 * (another process held it when the task's turn began, and let it go since), and the daemon is
 * killed with -9 in the middle of a real Claude Code turn: the agent's next request through
 * HTTP_PROXY reaches the allowed host, and the turn ends done with no lazy command in between.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { bash, containerProject, launched, removeContainers, settled, settledAs } from "../helpers/fixtures";
import { cleanupAll, isAlive, type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-RESPAWNEGRESS-" + "e".repeat(66) + "AA";
const ANSWER = `allowed-host-${crypto.randomUUID()}`;
/** Where the egress proxy tries first (egress/index.ts FIRST_PORT). */
const FIRST_PORT = 26224;
let mock: Mock.MockProvider;
let host: ReturnType<typeof Bun.serve>;
let p: Project;

beforeAll(async () => {
  mock = await Mock.anthropic();
  host = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(ANSWER) });
  p = await containerProject(mock, KEY, { container: `allow = ["127.0.0.1:${host.port}"]\n` });
}, 300_000);

afterAll(async () => {
  removeContainers(p);
  host?.stop(true);
  await cleanupAll(mock);
});

/** The gateway of the network the project's containers are on. */
function gatewayOf(taskRef: string): string {
  const id = sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.split("\n").filter(Boolean)[0];
  expect(id, `${taskRef}'s container`).toBeDefined();
  const net = Object.keys(JSON.parse(sh("/", `docker inspect ${id}`).out)[0].NetworkSettings.Networks)[0]!;
  const gw = JSON.parse(sh("/", `docker network inspect ${net}`).out)[0].IPAM.Config[0].Gateway as string;
  expect(gw).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
  return gw;
}

describe("kill -9 of the daemon mid-turn, the egress proxy on a port that is not its first", () => {
  test("the agent's request through its HTTP_PROXY after the kill reaches the allowed host; the turn ends done", async () => {
    // A first turn makes the project's network (and its gateway, known only then).
    mock.answer({ text: "Nothing to do." });
    await launched(p, "first", "make the network");
    await settledAs(p, "first");
    const gateway = gatewayOf("first");
    // A new daemon (the network stays: the task's container is there), and another process on
    // the egress proxy's first port when the next turn begins.
    await p.ok(["daemon", "restart"]);
    const squatter = Bun.listen({ hostname: gateway, port: FIRST_PORT, exclusive: true, socket: { open: (s) => void s.end(), data() {} } });
    const probe = `const u=new URL(process.env.HTTP_PROXY);require('http').get({host:u.hostname,port:u.port,path:'http://127.0.0.1:${host.port}/',headers:{host:'127.0.0.1:${host.port}'},timeout:20000},r=>{let d='';r.on('data',c=>d+=c);r.on('end',()=>console.log('got:',r.statusCode,d))}).on('error',e=>console.log('failed:',e.code||e.message)).on('timeout',function(){console.log('failed: timeout');this.destroy()})`;
    mock.answer(bash("Fetched.", `touch /lazy/home/started; sleep 8; node -e "${probe}"`, "fetch"));
    let proxyPort: string | undefined;
    try {
      await launched(p, "second", "fetch after the crash");
      const t = (await p.api("GET", "/api/tasks/second")).task;
      await until(() => existsSync(join(p.stateDir, "tasks", t.id, "home", "started")) || undefined, 180_000, "the agent's command");
      proxyPort = sh(
        "/",
        `docker exec ${sh("/", `docker ps -q --filter label=dev.lazy.task=${t.id}`).out.trim()} printenv HTTP_PROXY`,
      ).out.trim();
    } finally {
      squatter.stop(true);
    }
    // The container was given another port than the first.
    expect(proxyPort).toStartWith(`http://${gateway}:`);
    expect(proxyPort).not.toBe(`http://${gateway}:${FIRST_PORT}`);

    const before = p.runtime() as { pid: number };
    process.kill(before.pid, "SIGKILL");
    await until(() => !isAlive(before.pid), 5000, "the daemon to die");
    // No lazy command from here on: the new daemon's API, once it answers (the keeper closes each connection meanwhile).
    await until(
      async () =>
        ((p.runtime() as { pid: number } | undefined)?.pid !== before.pid &&
          (await p.api("GET", "/api/tasks").then(
            () => true,
            () => false,
          ))) ||
        undefined,
      10_000,
      "the new daemon",
    );
    const s = await settled(p, "second", 300_000);
    expect(s.task.status).toBe("done");
    // What the agent's request got went back to the model as the tool's output.
    const bodies = mock.received.filter((r) => r.method === "POST").map((r) => r.body);
    expect(bodies.some((b) => b.includes(`"tool_result","content":"got: 200 ${ANSWER}"`))).toBe(true);
    expect(p.log()).toContain(`the daemon (pid ${before.pid}) died (signal SIGKILL); starting it again`);
  }, 600_000);
});
