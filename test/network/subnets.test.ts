/**
 * Where project networks take their addresses (network/subnets.ts): a /24 of lazy's range
 * that overlaps no Docker network and no address of this host, and Docker's refusal, when it
 * has none left, worded with the cause and the remedy. No engine needed; one test makes a
 * bridge interface of its own (root, as CI runs).
 */
import { describe, expect, test } from "bun:test";
import { networkInterfaces } from "node:os";
import { Subnets } from "../../src/network";
import { hostBridge, sh } from "../helpers/lazy";

/** /proc/net/route as this machine wrote it: a default route, a bridge that is down (another engine's docker0), a VPN's /8. */
const ROUTES = [
  "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
  "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0",
  "docker0\t0000D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
  "tun0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0",
  "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
  "junk line",
].join("\n");

describe("project subnets", () => {
  test("a /24 of 10.213.0.0/16 that no Docker network and no host address overlaps", () => {
    const first = Subnets.candidates("proj-a", [])[0]!;
    expect(first.subnet).toMatch(/^10\.213\.\d+\.0\/24$/);
    expect(first.gateway).toBe(first.subnet.replace(".0/24", ".1"));
    // That block taken by another network (as a /24, or inside a wider one): never offered.
    const taken = Subnets.candidates("proj-a", [first.subnet, "10.213.0.0/20"]);
    expect(taken.map((c) => c.subnet)).not.toContain(first.subnet);
    expect(taken.some((c) => /^10\.213\.([0-9]|1[0-5])\.0\/24$/.test(c.subnet))).toBe(false);
    // The whole range taken (a VPN's 10.0.0.0/8, say): nothing, and Docker's own pool decides.
    expect(Subnets.candidates("proj-a", ["10.0.0.0/8"])).toEqual([]);
    // IPv6 and nonsense are ignored, not fatal.
    expect(Subnets.candidates("proj-a", ["fd00::/64", "bogus"]).length).toBeGreaterThan(200);
    // This host's own IPv4 networks are never handed out.
    const mine = Object.values(networkInterfaces())
      .flat()
      .flatMap((a) => (a?.family === "IPv4" && a.cidr?.startsWith("10.213.") ? [a.cidr] : []));
    for (const c of Subnets.candidates("proj-a", [])) expect(mine).not.toContain(c.subnet);
  });

  test("this host's routes are its networks, those of interfaces that are down too; the default route is not", () => {
    expect(Subnets.routesOf(ROUTES)).toEqual(["10.213.0.0/24", "10.0.0.0/8", "192.0.2.0/24"]);
    const hostNets = Subnets.hostNetworks(() => ROUTES.split("\n").slice(0, 3).join("\n"));
    expect(hostNets).toContain("10.213.0.0/24");
    const offered = Subnets.candidates("proj-a", [], hostNets).map((c) => c.subnet);
    // Exactly that block less than with this machine's addresses alone (whatever they hold).
    const byAddresses = Subnets.candidates(
      "proj-a",
      [],
      Subnets.hostNetworks(() => ""),
    ).map((c) => c.subnet);
    expect(offered).toEqual(byAddresses.filter((n) => n !== "10.213.0.0/24"));
    // No route table to read (not Linux): the addresses alone.
    expect(
      Subnets.hostNetworks(() => {
        throw new Error("ENOENT");
      }).every((n) => !n.startsWith("10.213.0.0/")),
    ).toBe(true);
  });

  test("a bridge's block shared with another interface's route is named (lazy doctor's subnet check)", () => {
    const table = [
      ...ROUTES.split("\n"),
      "br-abc\t0000D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
      "br-def\t0001D50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
    ].join("\n");
    // br-abc sits on docker0's 10.213.0.0/24; both are inside tun0's 10.0.0.0/8, which loses to
    // their more specific routes and so takes nothing from them.
    expect(Subnets.sharedWith("br-abc", () => table)).toEqual(["docker0 10.213.0.0/24"]);
    expect(Subnets.sharedWith("br-def", () => table)).toEqual([]);
    const host32 = `${table}\nlo\t0500D50A\t00000000\t0005\t0\t0\t0\tFFFFFFFF\t0\t0\t0`;
    expect(Subnets.sharedWith("br-abc", () => host32)).toEqual(["docker0 10.213.0.0/24", "lo 10.213.0.5/32"]);
    expect(Subnets.sharedWith("br-none", () => table)).toEqual([]);
    expect(
      Subnets.sharedWith("br-abc", () => {
        throw new Error("ENOENT");
      }),
    ).toEqual([]);
  });

  test("a bridge of this host that is down, on the block a project would take first, is passed over (real interface)", () => {
    const project = "proj-bridge-down";
    const first = Subnets.candidates(project, [])[0]!;
    const name = `lazyt${process.pid % 100000}`;
    // As Docker leaves a bridge whose containers are gone: no carrier ("linkdown" in ip route).
    const bridge = hostBridge(name, `${first.gateway}/24`);
    try {
      expect(sh("/", `ip route show dev ${name}`).out).toContain("linkdown");
      // The interface list does not show it.
      const listed = Object.values(networkInterfaces())
        .flat()
        .some((a) => a?.address === first.gateway);
      expect(listed).toBe(false);
      const now = Subnets.candidates(project, []).map((c) => c.subnet);
      expect(now).not.toContain(first.subnet);
      expect(now[0]).not.toBe(first.subnet);
    } finally {
      bridge.remove();
    }
    expect(Subnets.candidates(project, [])[0]!.subnet).toBe(first.subnet);
  });

  test("projects start from different blocks", () => {
    const starts = new Set(["a", "b", "c", "d", "e", "f", "g", "h"].map((p) => Subnets.candidates(`project-${p}`, [])[0]!.subnet));
    expect(starts.size).toBeGreaterThan(4);
  });

  test("Docker's 'no address pool' refusal is named with its cause and remedy", () => {
    const docker = "could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network";
    expect(Subnets.NO_POOL.test(docker)).toBe(true);
    const e = Subnets.exhausted("lazy-x", docker);
    expect(e.code).toBe("launch_refused");
    expect(e.message).toContain("Docker could not make the project's network lazy-x: it has no free address range left");
    expect(e.message).toContain(docker);
    expect(e.message).toContain("docker network prune");
  });
});

describe("this host's container networks (what the egress proxy keeps containers from)", () => {
  test("are the routes of bridge interfaces only: docker0 and br-… yes, eth0 and a VPN no", () => {
    const bridges = new Set(["docker0", "br-0123456789ab"]);
    const table = [
      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT",
      "eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0",
      "docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0",
      "br-0123456789ab\t00DCD50A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
      "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0",
      "tun0\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0",
    ].join("\n");
    expect(
      Subnets.bridgeNetworks(
        () => table,
        (i) => bridges.has(i),
      ),
    ).toEqual(["172.17.0.0/16", "10.213.220.0/24"]);
  });
});
