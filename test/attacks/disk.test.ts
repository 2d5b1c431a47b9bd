/**
 * Attacks on the disk (issue 35, finding 5): a task that writes past its disk bound
 * (`[container.limits] disk`) into its worktree, or into its container's /tmp, is stopped with
 * the reason and waits (raising the bound lets it go on); and with the disk holding LAZY_HOME
 * full (a 256 MiB tmpfs the test mounts, filled from the host), the store, the audit and the
 * daemon log still write and `lazy send` refuses saying why and what to do, never a 500.
 * Real Claude Code in real task containers, each attack a Bash tool call. Needs a real Docker
 * engine, and root for the tmpfs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bash, containerProject, containerToml, launched, oneRequest, settled, settledAs } from "../helpers/fixtures";
import { cleanupAll, type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-DISKATTACK-${"d".repeat(68)}AA`;
let anthropic: Mock.MockProvider;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
}, 60_000);

/** The small filesystem the full-disk attack mounts (unmounted once its project is cleaned up). */
let mnt: string | undefined;

afterAll(async () => {
  await cleanupAll(anthropic);
  if (mnt) {
    sh("/", `umount -l ${mnt}`);
    rmSync(mnt, { recursive: true, force: true });
  }
});

/** The events of a task (the API `lazy task show` calls). */
const shown = async (p: Project, ref: string): Promise<{ task: { status: string }; events: { kind: string; data: any }[] }> =>
  p.api("GET", `/api/tasks/${ref}`);

describe("a task's disk bound", () => {
  let p: Project;
  const toml = (disk: string) => containerToml(anthropic.url, { container: `\n[container.limits]\ndisk = "${disk}"\n` });

  beforeAll(async () => {
    p = await containerProject(anthropic, KEY, { toml: toml("64m") });
  }, 120_000);

  // The write goes on for a minute after the bound is crossed: a turn nobody stopped ends `done`.
  for (const [where, file] of [
    ["its worktree", "big.bin"],
    ["its container's /tmp", "/tmp/big.bin"],
  ] as const)
    test(`a turn writing 160 MiB into ${where} is stopped at its 64 MiB bound, saying so; the task waits and goes on once the bound is raised`, async () => {
      p.writeToml(toml("64m"));
      const code = file.startsWith("/tmp") ? "tmpfill" : "treefill";
      anthropic.answer(
        bash(
          "filled.",
          `for i in 1 2 3 4 5 6 7 8; do dd if=/dev/urandom of=${file}.$i bs=1M count=20 status=none; sleep 1; done; sleep 60`,
          "fill",
        ),
      );
      await launched(p, code, "fill the disk");
      const s = await settledAs(p, code, "waiting", 240_000);
      const ended = s.events.findLast((e: { kind: string }) => e.kind === "status");
      expect(ended.data.reason).toBe("disk");
      // The reason names the bound, what was used and how to raise it.
      expect(ended.data.error).toContain('over its bound of 64 MiB ([container.limits] disk = "64m")');
      expect(ended.data.error).toMatch(/filled \d+(\.\d)? MiB of disk/);
      expect(ended.data.error).toContain("raise the bound in lazy.toml");
      expect(ended.data.error).toContain(`lazy send ${code}`);
      // In /tmp it is the container's writable layer that filled.
      if (file.startsWith("/tmp"))
        expect(Number(/its container's writable layer ([\d.]+) MiB/.exec(ended.data.error)?.[1])).toBeGreaterThan(60);
      const refused = s.events.find((e: { kind: string; data: any }) => e.kind === "refused" && e.data.disk);
      expect(refused?.data.disk.bound).toBe(64 * 1024 ** 2);
      expect(refused?.data.disk.used).toBeGreaterThan(64 * 1024 ** 2);
      // Its container was stopped whole: nothing of the agent's writes on.
      const ids = sh("/", `docker ps -q --filter label=dev.lazy.root=${p.root}`).out.trim();
      expect(ids).toBe("");

      // Over its bound it starts nothing, and says why.
      anthropic.answer({ text: "went on." });
      const again = await p.run(["send", code, "go on"]);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('[container.limits] disk = "64m"');
      expect(again.stderr).toContain("raise the bound");
      // Not lost: with the bound raised it goes on.
      p.writeToml(toml("1g"));
      await p.ok(["send", code, "go on"]);
      await settledAs(p, code, "done");
    }, 420_000);
});

describe("a full disk under LAZY_HOME", () => {
  let p: Project;
  let disk: string;

  beforeAll(async () => {
    expect(process.getuid?.(), "mounting a tmpfs needs root").toBe(0);
    disk = mkdtempSync(join(tmpdir(), "lazy-small-disk-"));
    const m = sh("/", `mount -t tmpfs -o size=256m,mode=0755 lazy-small-disk ${disk}`);
    expect(m.code, m.err).toBe(0);
    mnt = disk;
    mkdirSync(join(disk, "home"));
    p = await containerProject(anthropic, KEY, { home: join(disk, "home") });
  }, 120_000);

  test("filled from the host: the daemon log, the store and the audit still write; lazy send refuses naming the disk and the remedy; with room again the task goes on", async () => {
    anthropic.answer({ text: "first turn done." });
    await launched(p, "full", "say done");
    await settledAs(p, "full", "done");

    const audited = async () =>
      ((await p.json(["stats", "audit", "--limit", "1000"])).rows as { path: string; status: number }[]).filter(
        (r) => r.path === "/v1/messages" && r.status === 200,
      ).length;
    const before = await audited();
    // The host fills the disk to the last byte.
    const filler = join(disk, "filler");
    sh("/", `dd if=/dev/zero of=${filler} bs=1M status=none; sync`);
    expect(sh("/", `df --output=avail -B1 ${disk} | tail -1`).out.trim()).toBe("0");

    // The daemon log says so: its line was written on the full disk.
    await until(() => /under the floor of/.test(p.log()) || undefined, 30_000, "the daemon's line about the full disk");
    expect(p.log()).toContain("freed lazy's reserve");

    // lazy send: refused with the reason and the remedy, not a 500.
    anthropic.answer({ text: "second turn done." });
    const sent = await p.run(["send", "full", "go on"]);
    expect(sent.code).not.toBe(0);
    expect(sent.stderr).toContain("the disk holding lazy's state");
    expect(sent.stderr).toContain("free space on that disk");
    expect(sent.stderr).not.toMatch(/internal error/i);
    // The store wrote the refusal.
    const s = await shown(p, "full");
    expect(s.task.status).toBe("done");
    expect(s.events.some((e) => e.kind === "refused" && String(e.data.reason).includes("under lazy's floor"))).toBe(true);
    // The audit wrote the request's row.
    anthropic.answer({ text: "audited." });
    expect(await oneRequest(p)).toBe(200);
    expect(await audited()).toBe(before + 1);
    expect(p.log()).not.toContain("a batch of audit rows was lost");

    // Room again: the task goes on.
    rmSync(filler);
    await until(() => /free again: turns may start/.test(p.log()) || undefined, 30_000, "the daemon to see room again");
    await p.ok(["send", "full", "go on"]);
    const after = await settled(p, "full");
    expect(after.task.status).toBe("done");
  }, 600_000);
});
