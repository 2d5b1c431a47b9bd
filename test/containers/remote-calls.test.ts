/**
 * lazy's own calls on a remote Docker engine (issue 28; this machine's second engine,
 * scripts/second-engine.sh, where the host's paths do not exist): with DOCKER_HOST pointing at
 * it, `lazy ask` answers from the two.mock provider, and `lazy accept` of a task that ran there
 * records the summary its call wrote. The call's container there, caught while it runs, has no
 * host bind mount (lazy's binary and the project's committed tree are volumes of that engine's
 * own, read-only) and no real key; after the call nothing of it is left on the engine, nor
 * after a daemon killed mid-call (the next daemon's housekeeping removes container, volume, folder).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { bash, launched, settled } from "../helpers/fixtures";
import { type Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";
import { onSecondEngine, remoteImage, remoteProject } from "../helpers/second-engine";

const KEY = `sk-ant-api03-REMOTECALLS-${"c".repeat(64)}AA`;
const two = onSecondEngine();
let p: Project;

beforeAll(async () => {
  p = await remoteProject(two.mock, KEY, two.projects, {
    host: two.host,
    bind: two.bind,
  });
  await remoteImage(two.host, p.root);
}, 600_000);

/** The project's call containers on the second engine (running or not). */
const calls = () => two.d2(`ps -aq --filter label=dev.lazy.root=${p.root} --filter name=-call-`).out.split("\n").filter(Boolean);
/** The project's call volumes there. */
const callVolumes = () =>
  two
    .d2("volume ls -q")
    .out.split("\n")
    .filter((v) => v.startsWith(`lazy-${basename(p.stateDir)}-call-`));

/**
 * Run `args` with the provider slow to answer, and `docker inspect` the call's container on the
 * second engine while it runs: the command's result and the inspect's JSON.
 */
async function caught(
  args: string[],
  reply: string,
): Promise<{ r: Awaited<ReturnType<Project["run"]>>; inspect: string; posts: Mock.MockProvider["received"] }> {
  two.mock.answer({ text: reply });
  two.mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 6000, gapMs: 0 };
  const run = p.run(args);
  const id = await until(() => calls()[0], 180_000, "the call's container on the second engine");
  const inspect = two.d2(`inspect ${id}`).out;
  const r = await run;
  const posts = two.mock.received.filter((x) => x.method === "POST");
  two.mock.reset();
  return { r, inspect, posts };
}

/** The call's container had no host mount and no real key; nothing of it is left there. */
function noHostMountNoKey(inspect: string): void {
  const info = JSON.parse(inspect)[0];
  expect(info.Mounts.map((m: any) => `${m.Type} ${m.Name} ${m.Destination} ${m.RW}`).sort()).toEqual(
    [expect.stringMatching(/^volume lazy-bin-[0-9a-f]{16} \/lazy\/bin false$/), `volume ${info.Name.slice(1)} ${p.root} false`].sort(),
  );
  expect(info.HostConfig.Binds ?? []).toEqual([]);
  expect(inspect).not.toContain(KEY);
  expect(calls()).toEqual([]);
  expect(callVolumes()).toEqual([]);
}

describe("lazy's own calls on a remote engine", () => {
  test("lazy ask answers from the provider; the call ran there with no host mount and no key, and left nothing", async () => {
    const { r, inspect, posts } = await caught(["ask", "What is in README.md?"], "It is a demo project.");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("It is a demo project.");
    // Through the proxy, the real key at the last hop only.
    expect(posts.length).toBeGreaterThanOrEqual(1);
    expect(posts[0]!.body).toContain("What is in README.md?");
    for (const x of posts) expect(x.headers["x-api-key"]).toBe(KEY);
    noHostMountNoKey(inspect);
    // Nothing ran on this machine's engine.
    expect(sh("/", `docker ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
    const rows = (await p.json(["stats", "audit"])).rows;
    expect(rows.at(-1)).toMatchObject({ role: "lazy", status: 200 });
  }, 600_000);

  test("lazy accept of a task that ran there records the summary its call wrote", async () => {
    two.mock.answer(bash("Committed.", "echo far > far.txt && git add far.txt && git commit -qm 'add far.txt'", "commit"));
    await launched(p, "far", "Add far.txt");
    const s = await settled(p, "far");
    expect(s.task.status, JSON.stringify(s.events.slice(-4))).toBe("done");
    expect(sh(p.root, "git log --format=%s lazy/far -1").out.trim()).toBe("add far.txt");

    const { r, inspect, posts } = await caught(["accept", "far", "--json"], "Adds far.txt, made on the remote engine.");
    expect(r.code, r.stderr).toBe(0);
    const acc = JSON.parse(r.stdout);
    expect(acc.summary).toBe("Adds far.txt, made on the remote engine.");
    expect(acc.summaryError).toBeNull();
    expect(sh(p.root, "git log -1 --format=%B main").out).toContain("Adds far.txt, made on the remote engine.");
    expect(posts[0]!.body).toContain("Write the body of a merge commit message");
    expect(posts[0]!.body).toContain("add far.txt");
    for (const x of posts) expect(x.headers["x-api-key"]).toBe(KEY);
    noHostMountNoKey(inspect);
  }, 900_000);

  test("a daemon killed during a remote call: the next daemon removes the call's container, volume and folder", async () => {
    two.mock.answer({ text: "Too late." });
    two.mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 20_000, gapMs: 0 };
    const asking = p.run(["ask", "take your time"]);
    await until(() => two.mock.received.some((x) => x.method === "POST") || undefined, 180_000, "the call's model request");
    const [id] = calls();
    const name = two.d2(`inspect -f '{{.Name}}' ${id}`).out.trim().replace(/^\//, "");
    expect(callVolumes()).toEqual([name]);
    const folder = join(p.stateDir, "calls", name.split("-call-")[1]!);
    expect(existsSync(folder)).toBe(true);
    process.kill(p.runtime()!.pid, "SIGKILL");
    // The CLI does not ask the next daemon again: the call had begun (the model had its request).
    const asked = await asking;
    expect(asked.code).not.toBe(0);
    expect(asked.stderr).toContain("The daemon stopped answering");
    expect(asked.stderr).toContain("lazy did not send it again");
    await p.ok(["task", "list"]); // a new daemon, whose housekeeping finds the orphan
    await until(() => !calls().includes(id!) || undefined, 60_000, "the orphan to go");
    await until(() => !callVolumes().includes(name) || undefined, 60_000, "its volume to go");
    await until(() => !existsSync(folder) || undefined, 60_000, "its folder to go");
    expect(two.mock.received.filter((x) => x.method === "POST")).toHaveLength(1); // asked once
    two.mock.reset();
    expect(calls()).toEqual([]);
    expect(callVolumes()).toEqual([]);
    expect(readdirSync(join(p.stateDir, "calls"))).toEqual([]);
  }, 600_000);
});
