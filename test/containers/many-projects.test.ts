/**
 * However many projects a machine has seen, a launch still finds an address for its network
 * (issue 28: after ~30 projects Docker's default pools ran out and every launch failed). Each
 * project here runs one real Claude Code turn against a mock provider, then `lazy daemon stop`:
 * nothing of it may run afterwards, and no lazy network may be left without a container.
 * LAZY_TEST_PROJECTS sets how many (60 by default, the number). Measured here: 60 in
 * 318 s on a quiet machine (a project: ~0.6 s set up, ~3.8 s for its turn, ~0.45 s to stop),
 * 35 in 284 s under load from other work; CI must stay under 30 min in all, so a tighter CI
 * can run LAZY_TEST_PROJECTS=35 (past the ~31 bridge networks Docker's default pools hold,
 * where launches failed before).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Subnets } from "../../src/network";
import { containerProject, whyEnded } from "../helpers/fixtures";
import { cleanupAll, hostBridge, type Project, sh } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-MANYPROJECTS-" + "m".repeat(68) + "AA";
const COUNT = Number(process.env.LAZY_TEST_PROJECTS ?? 60);
let mock: Mock.MockProvider;

beforeAll(async () => {
  mock = await Mock.anthropic();
  mock.reply = { text: "ok." };
});
afterAll(() => cleanupAll(mock));

const slugOf = (p: Project) => p.stateDir.split("/").at(-1)!;

/**
 * This test's projects' lazy networks (by label) that no container of any state names. Listed
 * with their labels in one call: another suite's daemon may remove its own network between a
 * listing and an inspect (housekeeping drops it once no task runs), which is none of this test's.
 */
function emptyLazyNetworks(slugs: Set<string>): string[] {
  const nets = sh("/", `docker network ls --filter label=dev.lazy.project --format '{{.Name}} {{.Label "dev.lazy.project"}}'`)
    .out.split("\n")
    .filter(Boolean)
    .map((line) => line.split(" "));
  const out: string[] = [];
  for (const [name, project] of nets) {
    if (!name || !project || !slugs.has(project)) continue; // another suite's or another helper's
    const containers = sh("/", `docker ps -aq --filter label=dev.lazy.project=${project}`).out.trim();
    if (!containers) out.push(name);
  }
  return out;
}

describe(`${COUNT} projects, one after another`, () => {
  test("each runs a real turn and its daemon is stopped: every launch succeeds, nothing runs, no network is left without a container", async () => {
    const slugs = new Set<string>();
    const t0 = performance.now();
    const phases = { setup: 0, run: 0, stop: 0, cleanup: 0 };
    for (let i = 0; i < COUNT; i++) {
      let t = performance.now();
      const lap = (k: keyof typeof phases) => {
        phases[k] += performance.now() - t;
        t = performance.now();
      };
      const p = await containerProject(mock, KEY);
      lap("setup");
      const slug = slugOf(p);
      slugs.add(slug);
      const r = await p.run(["run", `Say ok (${i})`]);
      lap("run");
      if (r.code !== 0) {
        const id = (await p.json<any[]>(["task", "list"]))[0]?.id;
        expect(r.code, `project ${i}: ${r.stderr}\n${id ? await whyEnded(p, id) : "(no task)"}`).toBe(0);
      }
      const subnet = sh("/", `docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' lazy-${slug}`).out.trim();
      expect(subnet).toMatch(/^10\.213\.\d+\.0\/24$/);
      t = performance.now();
      await p.ok(["daemon", "stop"]);
      lap("stop");
      expect(sh("/", `docker ps -q --filter label=dev.lazy.project=${slug}`).out.trim()).toBe("");
      expect(sh("/", `docker network ls -q --filter name=^lazy-${slug}$`).out.trim()).toBe("");
      expect(p.runtime()).toBeUndefined();
      // Its stopped container stays for the project's next turn; removed here to keep the machine's disk.
      await p.cleanup();
      lap("cleanup");
    }
    const each = Object.entries(phases).map(([k, v]) => `${k} ${Math.round(v / COUNT)} ms`);
    console.log(`${COUNT} projects in ${Math.round((performance.now() - t0) / 1000)} s; a project on average: ${each.join(", ")}`);
    expect(emptyLazyNetworks(slugs)).toEqual([]);
  }, 3_600_000);
});

describe("another engine's idle bridge on lazy's range", () => {
  test("a project whose first block is a bridge of this host that is down takes another, and its turn runs", async () => {
    const p = await containerProject(mock, KEY);
    const slug = slugOf(p);
    // The block lazy would take first now (what Docker and this host hold left out), held by an
    // up bridge with no carrier: another engine's docker0 or a network whose containers are gone.
    const taken = sh("/", `docker network inspect $(docker network ls -q) -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}'`)
      .out.split(/\s+/)
      .filter(Boolean);
    const first = Subnets.candidates(slug, taken)[0]!;
    const name = `lazyb${process.pid % 100000}`;
    const idle = hostBridge(name, `${first.gateway}/24`);
    let since: { remove(): void } | undefined;
    try {
      // Before, the project's bridge took that block too: the host answered the container out of
      // the other bridge, and Claude Code's connection to lazy's MCP route hung for 30 s.
      const r = await p.run(["run", "Say ok"]);
      if (r.code !== 0) {
        const id = (await p.json<any[]>(["task", "list"]))[0]?.id;
        expect(r.code, `${r.stderr}\n${id ? await whyEnded(p, id) : "(no task)"}`).toBe(0);
      }
      const subnet = sh("/", `docker network inspect -f '{{range .IPAM.Config}}{{.Subnet}}{{end}}' lazy-${slug}`).out.trim();
      expect(subnet).toMatch(/^10\.213\.\d+\.0\/24$/);
      expect(subnet).not.toBe(first.subnet);
      const subnetFinding = async () =>
        JSON.parse((await p.run(["doctor", "--json"])).stdout).findings.find((f: any) => f.check === "subnet");
      expect(await subnetFinding()).toMatchObject({ ok: true });
      // A bridge made on the project's block since (a VM's, another engine's): lazy doctor names it.
      since = hostBridge(`${name}c`, `${subnet.replace(".0/24", ".254")}/24`, { carrier: true });
      const found = await subnetFinding();
      expect(found).toMatchObject({ ok: false, blocking: true });
      expect(found.summary).toContain(`shares its addresses with ${name}c ${subnet}`);
      expect(found.remedy).toContain("lazy daemon stop");
    } finally {
      since?.remove();
      idle.remove();
      await p.cleanup();
    }
  }, 300_000);
});
