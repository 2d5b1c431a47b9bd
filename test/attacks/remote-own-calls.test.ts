/**
 * Attacks on lazy's own calls on a remote Docker engine (this machine's second engine,
 * scripts/second-engine.sh, where the host's paths do not exist). What travels there is the
 * project's committed tree only: a git-ignored .env, an untracked file and an uncommitted edit
 * stay on this host, and a committed link (to /etc/shadow, to a file of this host) travels as
 * a link, never as what it names here; the tree is read-only there even to root. What comes
 * back is bounded like a task's turn: a process in the call's container that swells its turn
 * folder past the bound gets the call refused, not read. Before own calls ran on remote
 * engines, each of these failed at the first step: `lazy ask` made no container there at all.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { type Project, until } from "../helpers/lazy";
import { onSecondEngine, remoteImage, remoteProject } from "../helpers/second-engine";

const KEY = `sk-ant-api03-REMOTECALLATTACK-${"k".repeat(60)}AA`;
const ENV_SECRET = "ENVSECRET-d41d8cd98f00b204";
const UNTRACKED = "UNTRACKEDSECRET-9e107d9d372bb682";
const UNCOMMITTED = "UNCOMMITTEDSECRET-e4d909c290d0fb1c";
const HOST_ONLY = "HOSTONLYSECRET-6f8db599de986fab";
const two = onSecondEngine();
let p: Project;

beforeAll(async () => {
  // A file of this host only, which a committed link names by its absolute path.
  const hostFile = join(mkdtempSync(join(tmpdir(), "lazy-hostonly-")), "secret.txt");
  writeFileSync(hostFile, `${HOST_ONLY}\n`);
  p = await remoteProject(two.mock, KEY, two.projects, {
    host: two.host,
    bind: two.bind,
    ignore: ["lazy.toml", ".env"],
    files: (root) => {
      writeFileSync(join(root, ".env"), `API_TOKEN=${ENV_SECRET}\n`);
      symlinkSync("/etc/shadow", join(root, "shadow"));
      symlinkSync(hostFile, join(root, "hostlink"));
    },
  });
  // After the first commit: an untracked file and an uncommitted edit.
  writeFileSync(join(p.root, "notes.txt"), `${UNTRACKED}\n`);
  writeFileSync(join(p.root, "README.md"), `# demo\n${UNCOMMITTED}\n`);
  await remoteImage(two.host, p.root);
}, 600_000);

const calls = () => two.d2(`ps -q --filter label=dev.lazy.root=${p.root} --filter name=-call-`).out.split("\n").filter(Boolean);
const leftovers = () => [
  ...two.d2(`ps -aq --filter label=dev.lazy.root=${p.root} --filter name=-call-`).out.split("\n").filter(Boolean),
  ...two
    .d2("volume ls -q")
    .out.split("\n")
    .filter((v) => v.startsWith(`lazy-${basename(p.stateDir)}-call-`)),
];

/** `lazy ask` with the provider slow to answer; `during(id)` runs against the call's container on the second engine meanwhile. */
async function askWhile<T>(during: (id: string) => Promise<T> | T): Promise<{ r: Awaited<ReturnType<Project["run"]>>; seen: T }> {
  two.mock.answer({ text: "An answer." });
  two.mock.behavior = { kind: "silent-then-stream", firstByteDelayMs: 8000, gapMs: 0 };
  const run = p.run(["ask", "What does this project hold?"]);
  // The harness has asked the model: its turn folder is there.
  await until(() => two.mock.received.some((x) => x.method === "POST") || undefined, 180_000, "the call's model request");
  const id = await until(() => calls()[0], 10_000, "the call's container on the second engine");
  const seen = await during(id);
  const r = await run;
  return { r, seen };
}

describe("what travels to a remote engine for lazy's own call", () => {
  test("only the committed tree: no .env, untracked file or uncommitted edit; links stay links; read-only even to root; no key", async () => {
    const { r, seen } = await askWhile((id) => ({
      names: two.d2(`exec -u 0 ${id} ls -A ${p.root}`).out.split("\n").filter(Boolean).sort(),
      readme: two.d2(`exec -u 0 ${id} cat ${p.root}/README.md`).out,
      kinds: two.d2(`exec -u 0 ${id} stat -c '%n %F' ${p.root}/shadow ${p.root}/hostlink`).out,
      hostlink: two.d2(`exec -u 0 ${id} cat ${p.root}/hostlink`),
      write: two.d2(`exec -u 0 ${id} touch ${p.root}/planted`),
      // Everything the call's container holds (lazy's binary aside) and its processes' environments.
      key: two.d2(
        `exec -u 0 ${id} sh -c 'grep -rl --exclude=lazy -e REMOTECALLATTACK -e ${ENV_SECRET} -e ${HOST_ONLY} /lazy /tmp /etc /home /root ${p.root} 2>/dev/null; cat /proc/[0-9]*/environ 2>/dev/null | grep -c REMOTECALLATTACK; echo scanned'`,
      ).out,
    }));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("An answer.");
    expect(seen.names).toEqual([".gitignore", "README.md", "hostlink", "shadow"]);
    expect(seen.readme).toBe("# demo\n");
    expect(seen.kinds).toContain(`${p.root}/shadow symbolic link`);
    expect(seen.kinds).toContain(`${p.root}/hostlink symbolic link`);
    expect(seen.hostlink.code).not.toBe(0); // the host's file does not exist there
    expect(seen.write.code).not.toBe(0);
    expect(seen.write.err).toContain("Read-only file system");
    expect(seen.key.trim()).toBe("0\nscanned");
    // The prompt names the checkout's state (git status), never the secrets' contents.
    for (const x of two.mock.received) {
      expect(x.body).not.toContain(ENV_SECRET);
      expect(x.body).not.toContain(UNTRACKED);
      expect(x.body).not.toContain(UNCOMMITTED);
      expect(x.body).not.toContain(HOST_ONLY);
      if (x.method === "POST") expect(x.headers["x-api-key"]).toBe(KEY);
    }
    expect(leftovers()).toEqual([]);
  }, 600_000);
});

describe("what comes back from a remote call", () => {
  test("a turn folder swollen past the bound is refused, not read: the call fails saying so; nothing of it is left", async () => {
    const callsDir = join(p.stateDir, "calls");
    let largest = 0;
    const { r, seen } = await askWhile(async (id) => {
      // A process in the call's container (root there) swells the turn's events file past 80 MiB.
      const w = two.d2(`exec -u 0 ${id} sh -c 'head -c 90000000 /dev/zero >> /lazy/turns/1/events.jsonl'`);
      // What reached this host meanwhile: the call's folder, watched until the call ends.
      for (let i = 0; i < 200 && calls().length; i++) {
        for (const c of safeList(callsDir)) {
          const f = join(callsDir, c, "turns", "1", "events.jsonl");
          largest = Math.max(largest, safeSize(f));
        }
        await Bun.sleep(100);
      }
      return w;
    });
    expect(seen.code, seen.err).toBe(0);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("lazy's own model call");
    expect(r.stderr).toContain(`its turn folder was not read back from the Docker engine at ${two.host}`);
    expect(r.stderr).toContain("is over 83886080 bytes: not brought back");
    expect(largest).toBeLessThan(80 * 1024 * 1024);
    expect(p.log()).toContain("is over 83886080 bytes: not brought back");
    expect(leftovers()).toEqual([]);
    expect(safeList(callsDir)).toEqual([]);
    // The daemon is fine: the next call answers.
    two.mock.reset();
    two.mock.answer({ text: "Still answering." });
    const again = await p.run(["ask", "anything?"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("Still answering.");
  }, 600_000);
});

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function safeSize(f: string): number {
  try {
    return statSync(f).size;
  } catch {
    return 0;
  }
}
