/**
 * Issue 26, finding 6: a task container reached every host service bound to 0.0.0.0 and every
 * other project's proxy and MCP listener. Under `[container] network = "allowlist"` (the
 * default) it reaches its own project's proxy and MCP port and lazy's egress proxy, and through
 * that only the hosts in `[container] allow`. Each attack runs inside a real task container as
 * the agent would (net-probe.cjs, node's own sockets; the test image has no curl), and asserts
 * the refusal and that the server it aimed at saw nothing.
 *
 * The "allowed host" is a server on the host's 127.0.0.1 allowed as `127.0.0.1:PORT`: the
 * egress proxy dials from the host, so it reaches it, while the container's own 127.0.0.1 is
 * itself. On the old code every attack here gets through (no fence, no HTTP_PROXY: the allowed
 * host does not even answer). Needs root (iptables) and a real Docker engine (CI has both).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PER_SOURCE } from "../../src/egress";
import { requireDocker, TEST_IMAGES } from "../helpers/env";
import { settled, settledAs } from "../helpers/fixtures";
import { cleanupAll, Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-NETFENCE-" + "f".repeat(72) + "AA";
const rand = Math.random().toString(16).slice(2, 8);
const BIN = join(import.meta.dir, "..", "..", "dist", "lazy");

/** A server of the test's own that counts what reaches it. */
function server(hostname: string, marker: string) {
  const s = {
    hits: 0,
    paths: [] as string[],
    srv: Bun.serve({
      hostname,
      port: 0,
      fetch(req) {
        s.hits++;
        s.paths.push(new URL(req.url).pathname + new URL(req.url).search);
        return new Response(marker);
      },
    }),
  };
  return s;
}
const ALLOWED = `allowed-${rand}`;
const DENIED = `denied-${rand}`;
const HOSTSVC = `hostsvc-${rand}`;
let allowed: ReturnType<typeof server>;
let denied: ReturnType<typeof server>;
let hostsvc: ReturnType<typeof server>;
let anthropic: Mock.MockProvider;
let a: Project;
let b: Project;
let watch: { proc: ReturnType<typeof Bun.spawn>; text: Promise<string> };

const slugOf = (p: Project) => readdirSync(join(p.home, "daemon"))[0]!;
const gatewayOf = (p: Project) =>
  JSON.parse(sh("/", `docker network inspect lazy-${slugOf(p)}`).out)[0].IPAM.Config.find((c: any) => c.Gateway && !c.Gateway.includes(":"))
    .Gateway as string;
const containerOf = (p: Project) => sh("/", `docker ps -q --filter label=dev.lazy.root=${p.root}`).out.trim().split("\n")[0] ?? "";

async function run(argv: string[]): Promise<string> {
  const pr = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(pr.stdout).text(), new Response(pr.stderr).text(), pr.exited]);
  return out + err;
}
/**
 * The probe where A's container sees it: its worktree (no container mounts the project's
 * checkout), put there as the agent would write it.
 */
const probeInTask = () => {
  const at = join(a.stateDir, "worktrees", "fence-a", "net-probe.cjs");
  if (!existsSync(at)) copyFileSync(join(import.meta.dir, "net-probe.cjs"), at);
  return at;
};
/** The probe in A's task container, as the agent (uid 1000) or root; its JSON answer. */
async function probe(
  args: string[],
  user = "1000",
): Promise<{ result: string; got?: string; code?: string; ms: number; proxy: string | null; answers?: string[] }> {
  const out = await run(["docker", "exec", "-u", user, containerOf(a), "node", probeInTask(), ...args]);
  const line = out.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line);
  } catch {
    throw new Error(`the probe printed: ${out}`);
  }
}
const toml = (mock: string, extra: string[] = []) =>
  [`[container]`, `base = "${TEST_IMAGES.node}"`, ...extra, ``, `[proxy.upstreams]`, `anthropic = "${mock}"`].join("\n");
const netLines = async () => {
  await Bun.sleep(300);
  return (
    await Bun.file(join(a.root, ".watch.ndjson"))
      .text()
      .catch(() => "")
  )
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((x) => x.type === "net" && x.role === "egress");
};

beforeAll(async () => {
  if (!(await requireDocker())) throw new Error("these tests need a Docker engine: bash scripts/setup-test-env.sh starts one");
  if (process.getuid?.() !== 0) throw new Error("the fence is iptables rules on the host: run this as root (CI does)");
  allowed = server("127.0.0.1", ALLOWED);
  denied = server("127.0.0.1", DENIED);
  hostsvc = server("0.0.0.0", HOSTSVC);
  anthropic = await Mock.anthropic();
  a = new Project({ toml: toml(anthropic.url, [`allow = ["127.0.0.1:${allowed.srv.port}"]`]) });
  b = new Project({ toml: toml(anthropic.url) });
  for (const p of [a, b]) {
    sh(
      p.root,
      "git config user.email dev@example.com && git config user.name Dev && echo '# demo' > README.md && printf 'lazy.toml\\nnet-probe.cjs\\n.watch.ndjson\\n' > .gitignore && git add README.md .gitignore && git commit -qm init",
    );
    await p.setCredential("anthropic", KEY);
  }
  copyFileSync(join(import.meta.dir, "net-probe.cjs"), join(a.root, "net-probe.cjs"));
  // lazy watch for A, from the start, as a person would leave it running.
  const proc = Bun.spawn(["sh", "-c", `exec "${BIN}" watch --json > .watch.ndjson`], { cwd: a.root, env: a.fullEnv(), stderr: "ignore" });
  watch = { proc, text: Promise.resolve("") };
  // A task in each project. B's turn ends (its network and listener stay); A's is held (its
  // agent sleeps in a Bash call), since a turn's end stops its container: the probes below run
  // in A's container during its own turn, as a prompt-injected agent's would.
  anthropic.reply = { text: "done." };
  await b.ok(["task", "add", "idle", "--code", "fence-b"]);
  await b.ok(["start", "fence-b"]);
  await settledAs(b, "fence-b");
  await a.ok(["task", "add", "idle", "--code", "fence-a"]);
  await hold();
}, 900_000);

/** Start A's next turn (its first if it has none) and hold it: the agent sleeps in a Bash call. */
async function hold(): Promise<void> {
  anthropic.reset();
  anthropic.reply = { text: "held.", toolUse: { name: "Bash", input: { command: "sleep 3600", description: "hold", timeout: 600000 } } };
  const first = (await a.json(["task", "show", "fence-a"])).task.status === "queued";
  await a.ok(first ? ["start", "fence-a"] : ["send", "fence-a", "hold"]);
  await anthropic.waitFor(1, 120_000);
  await until(() => containerOf(a) || undefined, 60_000, "A's container, running");
}

afterAll(async () => {
  watch?.proc.kill();
  await cleanupAll();
  await anthropic?.close();
  for (const s of [allowed, denied, hostsvc]) s?.srv.stop(true);
});

describe("the network fence (allowlist)", () => {
  test("an allowed loopback host answers through the egress proxy (plain HTTP and CONNECT), and each connection is a net> line in watch", async () => {
    const port = allowed.srv.port;
    const get = await probe(["get", `http://127.0.0.1:${port}/hello`]);
    expect(get.proxy).toMatch(/^http:\/\/[\d.]+:\d+$/); // the container's HTTP_PROXY
    expect(get.got).toContain("200 OK");
    expect(get.got).toContain(ALLOWED);
    const tunnel = await probe(["connect", "127.0.0.1", String(port)]);
    expect(tunnel.got).toContain("200 Connection Established");
    expect(tunnel.got).toContain(ALLOWED);
    expect(allowed.hits).toBe(2);
    const lines = await until(async () => ((await netLines()).length >= 2 ? netLines() : undefined), 10_000, "the net> lines");
    expect(lines).toContainEqual(
      expect.objectContaining({
        method: "GET",
        path: `http://127.0.0.1:${port}/hello`,
        status: 200,
        task: expect.objectContaining({ code: "fence-a" }),
      }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ method: "CONNECT", path: `127.0.0.1:${port}`, status: 200 }));
    // As a person reads it.
    const w = Bun.spawn([BIN, "watch", "--since", "10m"], { cwd: a.root, env: a.fullEnv(), stdout: "pipe", stderr: "pipe" });
    setTimeout(() => w.kill(), 3000);
    const text = await new Response(w.stdout).text();
    expect(text).toMatch(new RegExp(`fence-a\\s+net> egress - CONNECT 127\\.0\\.0\\.1:${port} 200 \\d+ms`));
    const doctor = JSON.parse((await a.run(["doctor", "--json"])).stdout) as {
      findings: { check: string; ok: boolean; summary: string }[];
    };
    expect(doctor.findings.find((f) => f.check === "fence")).toMatchObject({
      ok: true,
      summary: expect.stringContaining('network = "allowlist"'),
    });
    // The egress proxy listens on the gateway only.
    const listening = sh("/", `ss -ltnH "sport = :${new URL(get.proxy!).port}"`).out;
    expect(listening).toContain(`${gatewayOf(a)}:${new URL(get.proxy!).port}`);
    expect(listening).not.toMatch(/(0\.0\.0\.0|\*|\[::\]):\d+/);
    // The fence's rules name the ports the proxy and the egress proxy got.
    const proxyPort = JSON.parse(readFileSync(join(a.stateDir, "daemon.json"), "utf8")).proxy.port as number;
    const n = JSON.parse(sh("/", `docker network inspect lazy-${slugOf(a)}`).out)[0];
    const bridge = n.Options?.["com.docker.network.bridge.name"] || `br-${String(n.Id).slice(0, 12)}`;
    expect(sh("/", `iptables -t raw -S LAZY-FENCE-${bridge}`).out).toContain(
      `-d ${gatewayOf(a)}/32 -p tcp -m multiport ! --dports ${proxyPort},${new URL(get.proxy!).port} -j DROP`,
    );
  }, 120_000);

  test("another loopback port is refused 403 naming [container] allow, by GET and by CONNECT, and nothing reaches it", async () => {
    const port = denied.srv.port;
    const get = await probe(["get", `http://127.0.0.1:${port}/`]);
    expect(get.got).toContain("403 Forbidden");
    expect(get.got).toContain(`127.0.0.1:${port} is not in [container] allow`);
    expect(get.got).toContain(`add "127.0.0.1:${port}" to allow under [container] in lazy.toml`);
    const tunnel = await probe(["connect", "127.0.0.1", String(port)]);
    expect(tunnel.got).toContain("403 Forbidden");
    expect(tunnel.got).not.toContain(DENIED);
    expect(denied.hits).toBe(0);
    const lines = await netLines();
    expect(lines).toContainEqual(
      expect.objectContaining({
        method: "CONNECT",
        path: `127.0.0.1:${port}`,
        status: 403,
        refused: `127.0.0.1:${port} is not in [container] allow`,
      }),
    );
  }, 60_000);

  test("a host service on 0.0.0.0 is unreachable straight from the container: at its gateway, at another host address, as root too", async () => {
    const gw = gatewayOf(a);
    // Control: it answers the host at those addresses.
    expect(await (await fetch(`http://${gw}:${hostsvc.srv.port}/`)).text()).toBe(HOSTSVC);
    const before = hostsvc.hits;
    const other = sh("/", "ip -4 -o addr show dev docker0 | awk '{print $4}' | cut -d/ -f1").out.trim();
    for (const [host, user] of [[gw, "1000"], [gw, "0"], ...(other ? [[other, "1000"]] : [])] as [string, string][]) {
      const r = await probe(["direct", host, String(hostsvc.srv.port)], user);
      expect(r.result, `${host} as ${user}`).toBe("timeout"); // dropped: the connection never completes
      expect(r.got ?? "").not.toContain(HOSTSVC);
    }
    expect(hostsvc.hits).toBe(before);
  }, 120_000);

  test("the egress proxy is no way to the host's own services: the gateway, localhost and 0.0.0.0 are refused", async () => {
    const gw = gatewayOf(a);
    const before = hostsvc.hits;
    for (const host of [gw, "localhost", "0.0.0.0", "127.0.0.2"]) {
      const r = await probe(["connect", host, String(hostsvc.srv.port)]);
      expect(r.got, host).toContain("403 Forbidden");
    }
    expect(hostsvc.hits).toBe(before);
  }, 60_000);

  test("another project's proxy and MCP listener is unreachable, directly and through the egress proxy", async () => {
    const gwB = gatewayOf(b);
    const portB = JSON.parse(readFileSync(join(b.stateDir, "daemon.json"), "utf8")).proxy.port as number;
    // Control: B's listener is there (the host reaches it).
    const control = await fetch(`http://${gwB}:${portB}/mcp`, { method: "POST", body: "{}" });
    expect(control.status).toBeGreaterThanOrEqual(400);
    const direct = await probe(["direct", gwB, String(portB)]);
    expect(direct.result).toBe("timeout");
    const via = await probe(["connect", gwB, String(portB)]);
    expect(via.got).toContain("403 Forbidden");
  }, 60_000);

  test("a container of another Docker network cannot use the project's egress proxy", async () => {
    const net = `lazy-fence-other-${rand}`;
    sh("/", `docker network create ${net}`);
    try {
      const proxy = new URL((await probe(["get", "http://127.0.0.1:9/"])).proxy!);
      const before = allowed.hits;
      const out = await run([
        "docker",
        "run",
        "--rm",
        "--network",
        net,
        "-v",
        `${a.root}:${a.root}:ro`,
        "-e",
        `HTTP_PROXY=${proxy.origin}`,
        TEST_IMAGES.node,
        "node",
        join(a.root, "net-probe.cjs"),
        "connect",
        "127.0.0.1",
        String(allowed.srv.port),
      ]);
      expect(out).toContain("403 Forbidden");
      expect(out).toContain("is not on this project's network");
      expect(allowed.hits).toBe(before);
    } finally {
      sh("/", `docker network rm ${net}`);
    }
  }, 60_000);

  test("a head that never ends is cut after 10 s with 408, and nothing is dialed", async () => {
    const r = await probe(["slow"]);
    expect(r.got).toContain("408 Request Timeout");
    expect(r.ms).toBeGreaterThan(9_000); // not before its 10 s; the 408 says lazy cut it, not the client
  }, 60_000);

  test("a 20 KiB head is refused 431 before anything is dialed, even to an allowed host", async () => {
    const before = allowed.hits;
    const r = await probe(["big", `127.0.0.1:${allowed.srv.port}`]);
    expect(r.got).toContain("431");
    expect(allowed.hits).toBe(before);
  }, 60_000);

  test(`one container cannot hold more than ${PER_SOURCE} connections to the egress proxy`, async () => {
    const r = await probe(["many", String(PER_SOURCE + 8)]);
    const refused = (r.answers ?? []).filter((l) => l.includes("429"));
    expect(refused.length).toBeGreaterThanOrEqual(8);
    expect(refused.length).toBeLessThanOrEqual(8 + 2);
  }, 60_000);

  test("a real Claude Code turn under the fence still reaches its model and lazy's MCP, and finishes done", async () => {
    await a.ok(["stop", "fence-a"]); // the held turn
    expect((await settled(a, "fence-a")).task.status).toBe("waiting");
    anthropic.reset();
    anthropic.reply = { text: "Reported.", toolUse: { name: "mcp__lazy__report_progress", input: { note: `fenced-${rand}` } } };
    await a.ok(["send", "fence-a", "report"]);
    const s = await settled(a, "fence-a");
    expect(s.task.status).toBe("done");
    expect(s.events.find((e: any) => e.kind === "progress")?.data.text).toBe(`fenced-${rand}`);
    expect(anthropic.received.filter((r) => r.method === "POST").length).toBeGreaterThanOrEqual(2);
  }, 600_000);

  test("the task's placeholder sent out through the egress proxy is refused, stops the task and says why", async () => {
    const before = allowed.hits;
    anthropic.reset();
    anthropic.reply = {
      text: "sent.",
      toolUse: {
        name: "Bash",
        input: {
          command: `node ${probeInTask()} leak http://127.0.0.1:${allowed.srv.port}/ ; sleep 120`,
          description: "probe",
        },
      },
    };
    await a.ok(["send", "fence-a", "leak it"]);
    const s = await settled(a, "fence-a", 120_000);
    expect(s.task.status).toBe("waiting");
    const refused = s.events.findLast((e: any) => e.kind === "refused");
    expect(refused?.data.reason).toContain("placeholder was sent towards the network through lazy's egress proxy");
    expect(s.events.findLast((e: any) => e.kind === "stop")?.data.by).toContain("lazy"); // this turn's stop
    expect(allowed.hits).toBe(before);
    expect(allowed.paths.join("\n")).not.toContain("lazy-");
    // The audit and watch record the refusal without the placeholder.
    const tokens = (JSON.parse(readFileSync(join(a.stateDir, "proxy-tokens.json"), "utf8")).grants as { token: string }[]).map(
      (g) => g.token,
    );
    const lines = await netLines();
    const leak = lines.find((l) => l.status === 403 && String(l.refused).includes("placeholder"));
    expect(leak).toMatchObject({ method: "GET", task: { code: "fence-a" } });
    expect(leak.refused).toContain("the request carries task fence-a's placeholder");
    const all = await Bun.file(join(a.root, ".watch.ndjson")).text();
    for (const t of tokens) expect(all).not.toContain(t);
  }, 600_000);

  test("a placeholder in a CONNECT header is refused too, and shown as refused in watch", async () => {
    await hold(); // the task was stopped for its leak: a new turn, held, to probe from
    const before = allowed.hits;
    const r = await probe(["leak-connect", "127.0.0.1", String(allowed.srv.port)]);
    expect(r.got).toContain("403 Forbidden");
    expect(r.got).toContain("the request carries task fence-a's placeholder");
    expect(r.got).not.toContain("200 Connection Established");
    expect(allowed.hits).toBe(before);
    const line = await until(
      async () => (await netLines()).find((l) => l.method === "CONNECT" && l.status === 403 && String(l.refused).includes("placeholder")),
      10_000,
      "the refused CONNECT's net> line",
    );
    expect(line.path).toBe(`127.0.0.1:${allowed.srv.port}`);
  }, 180_000);

  test("the task's MCP token sent out through the egress proxy is refused and stops the task, and is in no record", async () => {
    await Bun.sleep(5_500); // a leak stops its task once in 5 s: the CONNECT leak before was one
    if ((await a.json(["task", "show", "fence-a"])).task.status !== "running") await hold();
    const before = allowed.hits;
    const token = (
      JSON.parse(readFileSync(join(a.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens as { token: string; taskId: string }[]
    ).map((t) => t.token);
    const r = await probe(["leak-mcp", `http://127.0.0.1:${allowed.srv.port}/collect`]);
    expect(r.got).toContain("403 Forbidden");
    expect(r.got).toContain("the request carries task fence-a's MCP token (its key to lazy's tools)");
    expect(allowed.hits).toBe(before);
    const s = await settled(a, "fence-a", 120_000);
    expect(s.task.status).toBe("waiting");
    expect(s.events.findLast((e: any) => e.kind === "refused")?.data.reason).toContain(
      "its MCP token was sent towards the network through lazy's egress proxy",
    );
    const all = await Bun.file(join(a.root, ".watch.ndjson")).text();
    for (const t of token) expect(all).not.toContain(t);
    await hold(); // the tests after probe from a running turn
  }, 180_000);

  test('network = "observe" lets a host through and records it; lazy egress suggest proposes it, and names what was refused', async () => {
    // A host that is neither this host's own nor on a container network: a server in a network
    // namespace the test makes, behind a veth pair (no bridge), as another machine would be.
    const ns = `lazyobs${rand}`;
    const [hostIf, nsIf] = [`vh${rand}`, `vn${rand}`];
    const ip = `10.251.${Number.parseInt(rand.slice(0, 2), 16)}.2`;
    sh(
      "/",
      `ip netns add ${ns} && ip link add ${hostIf} type veth peer name ${nsIf} && ip link set ${nsIf} netns ${ns} && ` +
        `ip addr add ${ip.replace(/\.2$/, ".1")}/30 dev ${hostIf} && ip link set ${hostIf} up && ` +
        `ip netns exec ${ns} ip addr add ${ip}/30 dev ${nsIf} && ip netns exec ${ns} ip link set ${nsIf} up && ip netns exec ${ns} ip link set lo up`,
    );
    const box = Bun.spawn(
      [
        "ip",
        "netns",
        "exec",
        ns,
        "bun",
        "-e",
        `Bun.serve({ hostname: "${ip}", port: 8080, fetch: () => new Response("observed-${rand}") })`,
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    try {
      await until(
        () => sh("/", `curl -s --max-time 2 http://${ip}:8080/`).out.includes(`observed-${rand}`),
        20_000,
        "the observed host's server",
      );
      expect((await probe(["connect", ip, "8080"])).got).toContain("403 Forbidden");
      a.writeToml(toml(anthropic.url, [`network = "observe"`, `allow = ["127.0.0.1:${allowed.srv.port}"]`]));
      const through = await until(
        async () => {
          const r = await probe(["connect", ip, "8080"]);
          return r.got?.includes(`observed-${rand}`) ? r : undefined;
        },
        30_000,
        "the config to reload with observe",
      );
      expect(through.got).toContain("200 Connection Established");
      // Still not this host's own services.
      expect((await probe(["connect", "127.0.0.1", String(denied.srv.port)])).got).toContain("403 Forbidden");
      // The refused CONNECT is observed off the request path: suggested once it is recorded.
      const s = await until(
        async () => {
          const x = await a.json(["egress", "suggest"]);
          return x.suggest.includes(`127.0.0.1:${denied.srv.port}`) ? x : undefined;
        },
        10_000,
        "the refused host in egress suggest",
      );
      expect(s.suggest).toContain(`${ip}:8080`);
      expect(s.suggest).toContain(`127.0.0.1:${denied.srv.port}`);
      expect(s.suggest).not.toContain(`127.0.0.1:${allowed.srv.port}`);
      expect(s.hosts).toContainEqual(expect.objectContaining({ entry: `127.0.0.1:${allowed.srv.port}`, allowed: "allow" }));
      const text = (await a.ok(["egress", "suggest"])).stdout;
      expect(text).toContain(`allow = ["127.0.0.1:${allowed.srv.port}", `);
    } finally {
      box.kill();
      sh("/", `ip link del ${hostIf}; ip netns del ${ns}`);
      a.writeToml(toml(anthropic.url, [`allow = ["127.0.0.1:${allowed.srv.port}"]`]));
    }
  }, 120_000);

  test('network = "observe" keeps other containers out: one on the default bridge and one on another Docker network, directly and through the egress proxy', async () => {
    // Issue 35, finding 10: observe let any address through the egress proxy that was not this
    // host's own, and the proxy dials from the host, which reaches every Docker network.
    const net = `lazy-fence-other-${rand}`;
    sh("/", `docker network create ${net}`);
    const serve = (marker: string) => `node -e "require('http').createServer((q, s) => s.end('${marker}')).listen(8080)"`;
    const onBridge = sh("/", `docker run -d --rm ${TEST_IMAGES.node} ${serve(`bridge-${rand}`)}`).out.trim();
    const onOther = sh("/", `docker run -d --rm --network ${net} ${TEST_IMAGES.node} ${serve(`other-${rand}`)}`).out.trim();
    try {
      const ipOf = (id: string, n: string) =>
        JSON.parse(sh("/", `docker inspect ${id}`).out)[0].NetworkSettings.Networks[n].IPAddress as string;
      const reachable = async (t: { ip: string; marker: string }, ms: number) =>
        until(
          () => sh("/", `curl -s --max-time 2 http://${t.ip}:8080/`).out.includes(t.marker) || undefined,
          ms,
          `the server at ${t.ip}`,
        ).then(
          () => true,
          () => false,
        );
      const other = { ip: ipOf(onOther, net), marker: `other-${rand}` };
      expect(await reachable(other, 20_000)).toBe(true);
      const targets = [other];
      // The default bridge, when this host reaches it: the suite's second engine (sharing this
      // network namespace) takes docker0 over with its own address, and then the first engine's
      // default-bridge containers are out of the host's reach, the egress proxy's included.
      const bridged = { ip: ipOf(onBridge, "bridge"), marker: `bridge-${rand}` };
      if (await reachable(bridged, 10_000)) targets.push(bridged);
      else console.warn(`[test] the default bridge (${bridged.ip}) is not reachable from this host: only the other network is tried`);
      a.writeToml(toml(anthropic.url, [`network = "observe"`, `allow = ["127.0.0.1:${allowed.srv.port}"]`]));
      // Observe is in force once an unlisted host that is no container answers through it.
      await until(
        async () => ((await probe(["get", `http://127.0.0.1:${denied.srv.port}/`])).got?.includes("this host's own") ? true : undefined),
        30_000,
        "the config to reload with observe",
      );
      for (const t of targets) {
        const tunnel = await probe(["connect", t.ip, "8080"]);
        expect(tunnel.got).toContain("403 Forbidden");
        expect(tunnel.got).toContain(`${t.ip} resolves to ${t.ip}: this host's own, a container network's or a link-local address`);
        expect(tunnel.got).not.toContain(t.marker);
        const get = await probe(["get", `http://${t.ip}:8080/`]);
        expect(get.got).toContain("403 Forbidden");
        expect(get.got).not.toContain(t.marker);
        const direct = await probe(["direct", t.ip, "8080"]);
        expect(direct.got ?? "").not.toContain(t.marker);
      }
    } finally {
      sh("/", `docker rm -f ${onBridge} ${onOther}; docker network rm ${net}`);
      a.writeToml(toml(anthropic.url, [`allow = ["127.0.0.1:${allowed.srv.port}"]`]));
    }
  }, 180_000);

  test('network = "none": the egress proxy is gone and its port dropped; the model proxy\'s port stays open', async () => {
    const proxyPort = JSON.parse(readFileSync(join(a.stateDir, "daemon.json"), "utf8")).proxy.port as number;
    const before = (await probe(["connect", "127.0.0.1", String(allowed.srv.port)])).proxy!;
    a.writeToml(toml(anthropic.url, [`network = "none"`, `allow = ["127.0.0.1:${allowed.srv.port}"]`]));
    try {
      const n = JSON.parse(sh("/", `docker network inspect lazy-${slugOf(a)}`).out)[0];
      const bridge = n.Options?.["com.docker.network.bridge.name"] || `br-${String(n.Id).slice(0, 12)}`;
      // Housekeeping (every 15 s) sets the fence for the new mode.
      await until(
        () => sh("/", `iptables -t raw -S LAZY-FENCE-${bridge}`).out.includes(`--dports ${proxyPort} -j DROP`),
        60_000,
        "the fence to follow network = none",
      );
      const hits = allowed.hits;
      const r = await probe(["connect", "127.0.0.1", String(allowed.srv.port)]);
      expect(r.proxy).toBe(before); // the container's old HTTP_PROXY …
      expect(r.result).toBe("timeout"); // … leads nowhere now
      expect(allowed.hits).toBe(hits);
      const direct = await probe(["direct", gatewayOf(a), String(proxyPort)]);
      expect(direct.got).toContain("HTTP/1.1 "); // the model proxy answers (404 for /)
    } finally {
      a.writeToml(toml(anthropic.url, [`allow = ["127.0.0.1:${allowed.srv.port}"]`]));
    }
  }, 120_000);

  test("after a daemon restart the fence is set again and the container's HTTP_PROXY still leads to the egress proxy", async () => {
    const hits = allowed.hits;
    await a.ok(["daemon", "restart"]);
    const r = await until(
      async () => {
        const x = await probe(["get", `http://127.0.0.1:${allowed.srv.port}/again`]);
        return x.got?.includes(ALLOWED) ? x : undefined;
      },
      60_000,
      "the egress proxy to be back where HTTP_PROXY points",
    );
    expect(r.got).toContain("200 OK");
    expect(allowed.hits).toBe(hits + 1);
    const direct = await probe(["direct", gatewayOf(a), String(hostsvc.srv.port)]);
    expect(direct.result).toBe("timeout");
  }, 120_000);
});
