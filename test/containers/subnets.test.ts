/**
 * Where project networks take their addresses (containers/subnets.ts): a /24 of lazy's range
 * that overlaps no Docker network and no address of this host, and Docker's refusal, when it
 * has none left, worded with the cause and the remedy. Pure functions: no engine needed.
 */
import { describe, expect, test } from "bun:test";
import { networkInterfaces } from "node:os";
import { Subnets } from "../../src/containers";

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
