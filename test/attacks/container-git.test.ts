/**
 * The agent as an attacker, for real: real Claude Code in a real task container runs the
 * probe's attacks as Bash tool calls (the mock provider answers with a tool_use), with the
 * passwordless sudo every agent has. Each test proves the outcome the attacker wanted did not
 * happen on the host: the project's .git keeps its owner and mode and is never mounted
 * writable, no hook the agent wrote runs, and the host folder or file a link pointed at is
 * unchanged. Needs a real Docker engine (CI starts one).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { containerProject, launched, launchedStatus, settled } from "../helpers/fixtures";
import { cleanupAll, type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-HOSTILEAGENT-" + "h".repeat(68) + "AA";
let anthropic: Mock.MockProvider;
let p: Project;
let victims: string;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = await containerProject(anthropic, KEY);
  // Host paths the attacks aim at: made by the test, outside everything lazy mounts.
  victims = realpathSync(mkdtempSync(join(tmpdir(), "lazy-victim-")));
}, 120_000);

afterAll(async () => {
  await cleanupAll(anthropic);
  if (victims) rmSync(victims, { recursive: true, force: true });
});

async function status(ref: string): Promise<string> {
  return (await p.json(["task", "show", ref])).task.status;
}
/** The status a task's turn ended in. */
const settledStatus = async (ref: string, timeoutMs?: number): Promise<string> => (await settled(p, ref, timeoutMs)).task.status;
/** `lazy send CODE next`: the status that turn ended in. */
async function nextTurn(ref: string): Promise<string> {
  await p.ok(["send", ref, "next"]);
  return settledStatus(ref);
}
/** The agent's next turn runs this command as a Bash tool call. */
function agentRuns(command: string): void {
  anthropic.answer({ text: "done.", toolUse: { name: "Bash", input: { command, description: "probe" } } });
}
const stat = (path: string) => {
  const s = statSync(path);
  return { uid: s.uid, gid: s.gid, mode: s.mode };
};
function containerMounts(ref: string): { Source: string; RW: boolean; Destination: string }[] {
  const ids = sh("/", `docker ps -q --filter label=dev.lazy.root=${p.root}`).out.split("\n").filter(Boolean);
  const out: { Source: string; RW: boolean; Destination: string }[] = [];
  for (const id of ids) out.push(...(JSON.parse(sh("/", `docker inspect ${id}`).out)[0].Mounts as never[]));
  expect(out.length, `a container of ${ref} is running`).toBeGreaterThan(0);
  return out;
}

describe("a hostile agent in its task container", () => {
  test("rewriting its .git to the project's own and killing its container gets neither a writable .git nor a hook run by accept", async () => {
    const gitDir = join(p.root, ".git");
    const before = stat(gitDir);
    const hooksBefore = stat(join(gitDir, "hooks"));
    const marker = join(victims, "hook-ran");
    // Turn 1: point the worktree at the project's .git, then stop its own container.
    agentRuns(`printf 'gitdir: ${gitDir}\\n' > .git && sudo pkill -KILL -f 'supervise --[i]dle'`);
    expect(await launchedStatus(p, "gitdir-swap", "probe the git boundary", 120_000)).toBe("failed");

    // Turn 2, in a new container: try to plant a hook in the project's .git, and commit.
    agentRuns(
      `(printf '#!/bin/sh\\ntouch ${marker}\\n' > ${gitDir}/hooks/post-merge && chmod +x ${gitDir}/hooks/post-merge) 2>/dev/null; ` +
        `(printf '#!/bin/sh\\ntouch ${marker}\\n' | sudo tee ${gitDir}/hooks/post-merge >/dev/null && sudo chmod +x ${gitDir}/hooks/post-merge) 2>/dev/null; ` +
        `echo work > work.txt && git add work.txt && git commit -qm 'agent work'; sleep 2`,
    );
    await p.ok(["send", "gitdir-swap", "go on"]);
    // While that turn runs, nothing of the project's .git is mounted writable.
    await until(() => sh("/", `docker ps -q --filter label=dev.lazy.root=${p.root}`).out.trim(), 60_000, "the new container");
    // Neither the .git folder, nor a folder above it, nor anything in it is a writable mount's source.
    for (const m of containerMounts("gitdir-swap"))
      if (m.RW)
        expect(
          gitDir === m.Source || gitDir.startsWith(m.Source + "/") || m.Source.startsWith(gitDir + "/"),
          `${m.Source} mounted read-write`,
        ).toBe(false);
    expect(await settledStatus("gitdir-swap")).toBe("done");

    expect(stat(gitDir)).toEqual(before);
    expect(stat(join(gitDir, "hooks"))).toEqual(hooksBefore);
    expect(existsSync(join(gitDir, "hooks", "post-merge"))).toBe(false);
    expect(sh(p.root, "git log --format=%s lazy/gitdir-swap -1").out.trim()).toBe("agent work");
    await p.ok(["accept", "gitdir-swap"]);
    expect(sh(p.root, "git log --format=%s main").out).toContain("agent work");
    expect(existsSync(marker)).toBe(false);
  }, 600_000);

  test("a link at the next turn's folder does not make the daemon chown the host folder it names", async () => {
    const victim = join(victims, "folder");
    mkdirSync(victim, { mode: 0o750 });
    writeFileSync(join(victim, "keep"), "untouched");
    const before = stat(victim);
    agentRuns(`ln -s ${victim} /lazy/turns/2`);
    expect(await launchedStatus(p, "turn-link", "probe the turn folders")).toBe("done");
    anthropic.answer({ text: "second turn." });
    const refused = await p.run(["send", "turn-link", "next"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("link");
    expect(stat(victim)).toEqual(before);
    expect(readFileSync(join(victim, "keep"), "utf8")).toBe("untouched");
    expect(await status("turn-link")).toBe("done"); // not left hanging in running
    expect((await p.ok(["logs", "turn-link"])).stdout).toContain("refused: turns/2 was a link");
    // lazy removed the link without following it: the next try runs.
    expect(await nextTurn("turn-link")).toBe("done");
    expect(stat(victim)).toEqual(before);
  }, 600_000);

  test("a link at the private ref stand-in does not make the daemon create the host file it names", async () => {
    const victim = join(victims, "created-by-daemon");
    const ref = join(p.root, ".git", "refs", "heads", "lazy", "ref-link");
    agentRuns(`rm -f ${ref} && ln -s ${victim} ${ref}`);
    expect(await launchedStatus(p, "ref-link", "probe the ref stand-in")).toBe("done");
    anthropic.answer({ text: "second turn." });
    expect(await nextTurn("ref-link")).toBe("done");
    expect(existsSync(victim)).toBe(false);
  }, 600_000);

  test("lazy stop works in an image without a kill binary, and a link at a turn file does not make it write the host file", async () => {
    const victim = join(victims, "stop-target");
    writeFileSync(victim, "original");
    const started = join(p.stateDir, "worktrees", "stop-link", "started");
    agentRuns(`sudo rm -f /usr/bin/kill /bin/kill; ln -s ${victim} /lazy/turns/1/stopped-by-user; touch started; sleep 100`);
    await launched(p, "stop-link", "probe stop");
    await until(() => existsSync(started), 120_000, "the agent's command to run");
    const id = (await p.json(["task", "show", "stop-link"])).task.id;
    expect(
      sh(
        "/",
        `docker exec $(docker ps -q --filter label=dev.lazy.task=${id}) sh -c 'ls /usr/bin/kill /bin/kill 2>/dev/null || echo none'`,
      ).out.trim(),
    ).toBe("none");
    await p.ok(["stop", "stop-link"]);
    expect(await settledStatus("stop-link", 60_000)).toBe("waiting");
    expect(readFileSync(victim, "utf8")).toBe("original");
  }, 600_000);

  test("a turn's events file swapped for a link to a host file fails the turn and reads nothing of it", async () => {
    const victim = join(victims, "host-events.jsonl");
    writeFileSync(
      victim,
      JSON.stringify({ type: "assistant", message: { content: [{ type: "text", text: "LEAKED-FROM-THE-HOST" }] } }) + "\n",
    );
    agentRuns(`rm -f /lazy/turns/1/events.jsonl && ln -s ${victim} /lazy/turns/1/events.jsonl; sleep 1`);
    expect(await launchedStatus(p, "events-link", "probe the events file")).toBe("failed");
    const logs = (await p.ok(["logs", "events-link"])).stdout;
    expect(logs).not.toContain("LEAKED-FROM-THE-HOST");
    expect(logs).toContain("link");
  }, 600_000);
});
