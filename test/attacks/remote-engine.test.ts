/**
 * Attacks on a task that runs on a remote Docker engine (this machine's second engine,
 * scripts/second-engine.sh): what comes back from its container is hostile input. A hostile
 * agent (real Claude Code running the two.mock's Bash tool_use) plants a link, a forged object and
 * a huge file among its objects, or turns its ref and its objects folder into links; and it
 * looks for the real key everywhere it can. An untrusted lazy.toml cannot name where the
 * remote engine's containers reach the proxy. Before lazy shipped to remote engines, each of
 * these was moot in a different way: a remote engine was handed bind mounts of host paths
 * (empty or missing there), and remote_bind did not exist (a strict schema refused it as
 * unknown, not as untrusted).
 */
import { describe, expect, test } from "bun:test";
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { containerProject, containerToml, edit, settled } from "../helpers/fixtures";
import { type Project, sh } from "../helpers/lazy";
import { onSecondEngine, remoteImage, remoteProject as sharedRemoteProject } from "../helpers/second-engine";

const KEY = `sk-ant-api03-REMOTEATTACK-${"q".repeat(64)}AA`;
const two = onSecondEngine();

async function remoteProject(): Promise<Project> {
  const p = await sharedRemoteProject(two.mock, KEY, two.projects, { host: two.host, bind: two.bind });
  await remoteImage(two.host, p.root);
  return p;
}

/** The agent runs `command` (as root where it says sudo) in its remote container, then ends its turn. */
async function agentRuns(p: Project, code: string, command: string): Promise<any> {
  two.mock.reset();
  two.mock.reply = { text: "done.", toolUse: { name: "Bash", input: { command, description: "work" } } };
  await p.ok(["task", "add", `attack ${code}`, "--code", code]);
  await p.ok(["start", code]);
  return settled(p, code);
}

/** Every path under `dir` that is a link (none may come back from a container). */
function links(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const f = join(d, n);
      const st = lstatSync(f);
      if (st.isSymbolicLink()) out.push(f);
      else if (st.isDirectory()) walk(f);
    }
  };
  walk(dir);
  return out;
}

const LINK = `ab/${"a".repeat(38)}`;
const FORGED = `cd/${"c".repeat(38)}`;
const HUGE = `ef/${"e".repeat(38)}`;

describe("what comes back from a remote container", () => {
  test("a link, a forged object and a huge file among the agent's objects are refused; its real commit still lands; no key anywhere it looks", async () => {
    const p = await remoteProject();
    const s = await agentRuns(
      p,
      "planted",
      [
        "echo real > real.txt && git add real.txt && git commit -qm 'a real commit'",
        'O="$(git rev-parse --git-common-dir)/objects"',
        `mkdir -p "$O/ab" "$O/cd" "$O/ef"`,
        `ln -s /etc/passwd "$O/${LINK}"`,
        `head -c 4096 /dev/urandom > "$O/${FORGED}"`,
        `head -c 70000000 /dev/zero > "$O/${HUGE}"`,
        // What a hostile agent looks through for the real key: its env, PID 1's, its files.
        "env; sudo cat /proc/1/environ | tr '\\0' '\\n'; sudo grep -rs sk-ant- /lazy/home /lazy/harness /etc 2>/dev/null | head -20; true",
      ].join(" && "),
    );
    expect(s.task.status, JSON.stringify(s.events.slice(-4))).toBe("done");
    // The real commit came back and was imported.
    expect(sh(p.root, "git log --format=%s lazy/planted -1").out.trim()).toBe("a real commit");
    // The link and the huge file were named and not brought back; the forged object never entered the repository.
    const refused = s.events.filter((e: any) => e.kind === "refused").map((e: any) => String(e.data.reason));
    expect(refused.join("\n")).toContain(`objects/${LINK}: not a regular file`);
    expect(refused.join("\n")).toContain(`objects/${HUGE}: over`);
    const privateObjects = join(p.stateDir, "tasks", s.task.id, "git", "objects");
    expect(links(privateObjects)).toEqual([]);
    for (const name of [LINK, FORGED, HUGE])
      expect(sh(p.root, `git cat-file -e ${name.replace("/", "")}`).code, `${name} reached the repository`).not.toBe(0);
    expect(links(join(p.root, ".git", "objects"))).toEqual([]);
    // The agent's search went to the provider in its tool result: never the real key.
    const posts = two.mock.received.filter((r) => r.method === "POST");
    expect(posts.some((r) => r.body.includes("LAZY_IN_CONTAINER"))).toBe(true); // the search ran and was reported
    for (const r of posts) expect(r.body).not.toContain(KEY);
  }, 600_000);

  test("its ref and its objects folder made into links: nothing is followed, the branch does not move", async () => {
    const p = await remoteProject();
    const s = await agentRuns(
      p,
      "linked",
      [
        "echo x > x.txt && git add x.txt && git commit -qm 'then hidden'",
        'C="$(git rev-parse --git-common-dir)"',
        'sudo mv "$C/objects" /tmp/objects-moved && sudo ln -s / "$C/objects"',
        'sudo rm -f "$C/refs/heads/lazy/linked" && sudo ln -s /etc/hostname "$C/refs/heads/lazy/linked"',
      ].join(" && "),
    );
    expect(s.task.status, JSON.stringify(s.events.slice(-4))).toBe("done");
    expect(sh(p.root, "git log --format=%s lazy/linked -1").out.trim()).toBe("init");
    const refused = s.events.filter((e: any) => e.kind === "refused").map((e: any) => String(e.data.reason));
    expect(refused.join("\n")).toContain("refs/heads/lazy/linked: not a regular file");
    expect(links(join(p.stateDir, "tasks", s.task.id, "git"))).toEqual([]);
  }, 600_000);
});

describe("where a remote engine's containers reach the proxy", () => {
  test("[proxy] remote_bind from an untrusted lazy.toml is refused; nothing runs on the engine", async () => {
    const p = await containerProject(two.mock, KEY, { env: { DOCKER_HOST: two.host } });
    two.projects.push(p);
    two.mock.reset();
    // A pull that sets remote_bind: lazy's proxy would listen on an address the person never chose.
    edit(p, `${containerToml(two.mock.url)}\n[proxy]\nremote_bind = "${two.bind}"\n`);
    const r = await p.run(["run", "anything", "--code", "pulled"]);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain("lazy trust");
    expect(two.mock.received).toEqual([]);
    expect(two.d2(`ps -aq --filter label=dev.lazy.root=${p.root}`).out.trim()).toBe("");
  }, 120_000);
});
