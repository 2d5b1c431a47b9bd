/**
 * Issue 17: on a cloud VM, 169.254.169.254 hands out the host's own credentials to whoever
 * connects, so a task's container must not reach it. The test owns that address here: a veth
 * pair into a network namespace of its own, 169.254.169.254 on the far end with an HTTP
 * listener, a host route to it. It proves the address answers the host and a container on a
 * network lazy did not make (so the test can fail), then that a lazy task's container (as the
 * agent, and as root through its sudo) cannot connect, that lazy puts its rules back when they
 * are flushed, and that `[container] allow_metadata = true` lets it through.
 * Needs root and a real Docker engine (CI has both).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { requireDocker, TEST_IMAGES } from "../helpers/env";
import { anthropicProject, bash, launched, teardown } from "../helpers/fixtures";
import { type Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-METADATA-" + "m".repeat(68) + "AA";
const METADATA = "169.254.169.254";
const rand = Math.random().toString(16).slice(2, 6);
const NS = `lazy-md-${rand}`;
const VETH_HOST = `lzmd${rand}h`;
const VETH_NS = `lzmd${rand}n`;
/** The host end's own address: the source the host (and Docker's masquerade) uses towards the namespace. */
const HOST_END = `10.213.${parseInt(rand.slice(0, 2), 16)}.1`;
const CONTROL_NET = `lazy-md-control-${rand}`;
/** What the test's metadata server says: seeing it means the connection got through. */
const ANSWER = `metadata-answer-${rand}`;
// network = "open": this file tests the link-local guard alone (the fence would drop the
// metadata address too; test/attacks/network.test.ts tests the fence).
const TOML = (extra: string[] = []) =>
  [
    `[container]`,
    `base = "${TEST_IMAGES.node}"`,
    `network = "open"`,
    ...extra,
    ``,
    `[proxy.upstreams]`,
    `anthropic = "${anthropic.url}"`,
  ].join("\n");

let anthropic: Mock.MockProvider;
let p: Project;
let listener: { kill(): void } | undefined;
let bridge: string | undefined;

const sh = (cmd: string) => {
  const r = Bun.spawnSync(["bash", "-c", cmd], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
};
const must = (cmd: string) => {
  const r = sh(cmd);
  if (r.code !== 0) throw new Error(`${cmd} exited ${r.code}: ${r.err}`);
  return r.out;
};
/** An HTTP request to the metadata address by bash's /dev/tcp (no curl, no proxy variables), cut at 5 s. */
const PROBE = `timeout 5 bash -c 'exec 3<>/dev/tcp/${METADATA}/80 && printf "GET / HTTP/1.0\\r\\n\\r\\n" >&3 && cat <&3' 2>&1; echo "exit=$?"`;
/** Bun.spawn, not spawnSync: the docker CLI waits, and this process must not block (the listener is another process anyway). */
async function run(argv: string[]): Promise<string> {
  const pr = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(pr.stdout).text(), new Response(pr.stderr).text(), pr.exited]);
  return out + err;
}
const taskContainer = () => sh(`docker ps -q --filter label=dev.lazy.root=${p.root}`).out.trim().split("\n")[0] ?? "";
const probeTask = (user: string) => run(["docker", "exec", "-u", user, taskContainer(), "bash", "-c", PROBE]);

beforeAll(async () => {
  if (!(await requireDocker())) throw new Error("these tests need a Docker engine: bash scripts/setup-test-env.sh starts one");
  if (process.getuid?.() !== 0) throw new Error("this test makes a network namespace and a host route: run it as root (CI does)");
  // 169.254.169.254 in a namespace of the test's own, one veth away from the host.
  must(`ip netns add ${NS}`);
  must(`ip link add ${VETH_HOST} type veth peer name ${VETH_NS}`);
  must(`ip link set ${VETH_NS} netns ${NS}`);
  must(`ip addr add ${HOST_END}/32 dev ${VETH_HOST} && ip link set ${VETH_HOST} up`);
  must(
    `ip netns exec ${NS} sh -c 'ip link set lo up && ip addr add ${METADATA}/32 dev ${VETH_NS} && ip link set ${VETH_NS} up && ip route add ${HOST_END}/32 dev ${VETH_NS} && ip route add default via ${HOST_END} dev ${VETH_NS} onlink'`,
  );
  must(`ip route add ${METADATA}/32 dev ${VETH_HOST}`);
  const server = Bun.spawn(
    [
      "ip",
      "netns",
      "exec",
      NS,
      process.execPath,
      "-e",
      `Bun.serve({ hostname: "${METADATA}", port: 80, fetch: () => new Response("${ANSWER}") }); console.log("up");`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  listener = server;
  const reader = server.stdout.getReader();
  await Promise.race([
    reader.read(),
    Bun.sleep(10_000).then(() => {
      throw new Error("the test's metadata listener did not start");
    }),
  ]);
  reader.releaseLock();
  must(`docker network create ${CONTROL_NET}`);

  ({ anthropic, p } = await anthropicProject(KEY, { container: 'network = "open"' }));
}, 120_000);

afterAll(async () => {
  await teardown(p, anthropic); // removes the project's containers and network behind lazy's back
  listener?.kill();
  sh(`docker network rm ${CONTROL_NET}`);
  sh(`ip route del ${METADATA}/32 dev ${VETH_HOST}`);
  sh(`ip link del ${VETH_HOST}`);
  sh(`ip netns del ${NS}`);
  // The jump lazy made for the project's bridge (lazy would prune it on its next run); the
  // shared chain goes only if nothing else jumps to it (-X refuses otherwise).
  if (bridge)
    for (const t of ["iptables", "ip6tables"])
      sh(
        `while ${t} -t raw -D PREROUTING -i ${bridge} -j LAZY-LINKLOCAL 2>/dev/null; do :; done; ${t} -t raw -S PREROUTING | grep -q -- '-j LAZY-LINKLOCAL' || { ${t} -t raw -F LAZY-LINKLOCAL && ${t} -t raw -X LAZY-LINKLOCAL; }`,
      );
});

async function settled(ref: string, timeoutMs = 300_000): Promise<string> {
  return until(
    async () => {
      const s = (await p.json(["task", "show", ref])).task.status as string;
      return s !== "running" && s !== "queued" ? s : undefined;
    },
    timeoutMs,
    `task ${ref} to end its turn`,
  );
}

/**
 * Task md in a long turn (a turn's end stops its container: the probes run during it; lazy stop
 * ends it), its first model request made, and the project's bridge: made by the first test that
 * needs it, so each test runs alone (bun test -t) as well as in order. The task's container.
 */
let md: Promise<string> | undefined;
const probing = () =>
  (md ??= (async () => {
    anthropic.answer(bash("done.", "sleep 590", "wait", { timeout: 600_000 }));
    await launched(p, "md", "probe the metadata address");
    const id = await until(taskContainer, 120_000, "the task's container");
    await until(() => anthropic.received.some((r) => r.method === "POST") || undefined, 120_000, "the turn's model request");
    const net = JSON.parse(must(`docker network inspect lazy-$(ls ${p.home}/daemon)`))[0];
    bridge = net.Options?.["com.docker.network.bridge.name"] || `br-${String(net.Id).slice(0, 12)}`;
    return id;
  })());

describe("link-local metadata addresses", () => {
  test("the test's metadata server answers the host and a container on a network lazy did not make", async () => {
    expect(await run(["bash", "-c", PROBE])).toContain(ANSWER);
    expect(await run(["docker", "run", "--rm", "--network", CONTROL_NET, TEST_IMAGES.debian, "bash", "-c", PROBE])).toContain(ANSWER);
  }, 120_000);

  test("a task's container cannot connect to 169.254.169.254, as the agent or as root, and a flushed rule comes back", async () => {
    const id = await probing();
    const asAgent = await probeTask("1000");
    expect(asAgent).not.toContain(ANSWER);
    expect(asAgent).toContain("exit=124"); // dropped: the connection never completes
    expect(await probeTask("0")).not.toContain(ANSWER);
    // The agent's sudo still works without the capabilities lazy dropped.
    expect((await run(["docker", "exec", "-u", "1000", id, "sudo", "-n", "id", "-u"])).trim()).toBe("0");
    const caps = JSON.parse(must(`docker inspect ${id}`))[0].HostConfig.CapDrop as string[];
    expect(caps).toEqual(expect.arrayContaining(["NET_RAW", "MKNOD", "SETFCAP"]));

    expect(sh(`iptables -t raw -C PREROUTING -i ${bridge} -j LAZY-LINKLOCAL`).code).toBe(0);
    expect(sh(`ip6tables -t raw -C PREROUTING -i ${bridge} -j LAZY-LINKLOCAL`).code).toBe(0);

    const doctor = JSON.parse((await p.run(["doctor", "--json"])).stdout) as {
      findings: { check: string; ok: boolean; summary: string }[];
    };
    const finding = doctor.findings.find((f) => f.check === "network");
    expect(finding?.ok).toBe(true);
    expect(finding?.summary).toContain("cannot reach link-local metadata addresses");

    // A firewall reload flushes the chain: the daemon's housekeeping (every 15 s) puts it back.
    must("iptables -t raw -F LAZY-LINKLOCAL");
    expect(await probeTask("1000")).toContain(ANSWER);
    await until(
      () => sh(`iptables -t raw -C LAZY-LINKLOCAL -d ${METADATA.replace(/\.\d+\.\d+$/, ".0.0")}/16 -j DROP`).code === 0,
      60_000,
      "lazy to restore its rules",
    );
    expect(await probeTask("1000")).not.toContain(ANSWER);
  }, 600_000);

  test("with [container] allow_metadata = true the task's container reaches it", async () => {
    await probing();
    expect(bridge, "the task's bridge").toBeDefined();
    p.writeToml(TOML(["allow_metadata = true"]));
    // The config reloads; housekeeping takes the project's jump away.
    await until(
      () => sh(`iptables -t raw -C PREROUTING -i ${bridge} -j LAZY-LINKLOCAL`).code !== 0,
      60_000,
      "lazy to remove the bridge's jump",
    );
    expect(await probeTask("1000")).toContain(ANSWER);
    const doctor = JSON.parse((await p.run(["doctor", "--json"])).stdout) as {
      findings: { check: string; ok: boolean; summary: string }[];
    };
    expect(doctor.findings.find((f) => f.check === "network")?.summary).toContain("allow_metadata = true");

    p.writeToml(TOML());
    await until(() => sh(`iptables -t raw -C PREROUTING -i ${bridge} -j LAZY-LINKLOCAL`).code === 0, 60_000, "lazy to block it again");
    expect(await probeTask("1000")).not.toContain(ANSWER);
    await p.ok(["stop", "md"]);
    expect(await settled("md")).toBe("waiting");
  }, 300_000);
});
