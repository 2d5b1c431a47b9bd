/**
 * Attacks on the trust record itself (issue 26, the attacker's pass): another local user who can
 * write LAZY_HOME/trusted.json (a lazy home on a shared or badly-masked folder, or a record that
 * is a link to a file in /tmp) approves a lazy.toml that sends the stored key to their server.
 *
 * Against the code before this probe (config/trust.ts read trusted.json whoever could write
 * it; daemon.json already had this check in daemon/state.ts): the forged record was taken, the
 * daemon started on the attacker's upstream, and lazy trust added to the forged file.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upstream, upstreamsForFile } from "../helpers/fixtures";
import { BIN, Project } from "../helpers/lazy";

const KEY = "sk-ant-api03-PROBETRUST-" + "r".repeat(70) + "AA";
const up = upstreamsForFile();

/**
 * The attacker's lazy.toml in the project, and a trust record approving it, made the way the
 * attacker would (lazy trust under a lazy home of their own): returns that record's path.
 */
function forge(p: Project): string {
  writeFileSync(join(p.root, "lazy.toml"), upstream(up.attacker.url));
  const theirs = mkdtempSync(join(tmpdir(), "lazy-probe-forger-"));
  up.scratch.push(theirs);
  const r = Bun.spawnSync([BIN, "trust", "--yes"], {
    cwd: p.root,
    env: { ...process.env, LAZY_HOME: theirs, LAZY_CREDENTIAL_BACKEND: "file" },
  });
  expect(r.exitCode, r.stderr.toString()).toBe(0);
  return join(theirs, "trusted.json");
}

/** A project whose daemon ran on the good upstream with the key stored, then stopped. */
async function victim(): Promise<Project> {
  const p = new Project({ toml: upstream(up.good.url) });
  await p.setCredential("anthropic", KEY);
  await p.ok(["daemon", "stop"]);
  up.attacker.reset();
  return p;
}

async function refusedEverywhere(p: Project, record: string, why: string): Promise<void> {
  for (const args of [
    ["daemon", "start"],
    ["task", "list"],
    ["ask", "hello?"],
  ]) {
    const r = await p.run(args);
    expect(r.code, `lazy ${args.join(" ")}: ${r.stderr}`).toBe(4);
    expect(r.stderr).toContain(`${record} (what you trusted with lazy trust) is ${why}`);
    expect(r.stderr).toContain(`rm ${record}`);
  }
  expect(p.runtime()).toBeUndefined();
  expect(up.attacker.received).toEqual([]);
}

describe("a trust record another user could have written", () => {
  test("a world-writable trusted.json approving the attacker's upstream: every command exits 4 naming it, no daemon, no request", async () => {
    const p = await victim();
    const mine = join(p.home, "trusted.json");
    copyFileSync(forge(p), mine);
    chmodSync(mine, 0o666);
    await refusedEverywhere(p, mine, "writable by other users");
  }, 120_000);

  test("trusted.json a link to a world-writable file in /tmp holding the approval: refused the same way", async () => {
    const p = await victim();
    const mine = join(p.home, "trusted.json");
    const shared = join(mkdtempSync(join(tmpdir(), "lazy-probe-shared-")), "trusted.json");
    up.scratch.push(join(shared, ".."));
    copyFileSync(forge(p), shared);
    chmodSync(shared, 0o666);
    rmSync(mine, { force: true });
    symlinkSync(shared, mine);
    await refusedEverywhere(p, mine, "writable by other users");
  }, 120_000);

  test("lazy trust does not build on a record others may write: refused with the remedy, the forged file left as it was", async () => {
    const p = await victim();
    const mine = join(p.home, "trusted.json");
    copyFileSync(forge(p), mine);
    chmodSync(mine, 0o664);
    const before = readFileSync(mine, "utf8");
    const r = await p.run(["trust", "--yes"]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(`${mine} (what you trusted with lazy trust) is writable by other users`);
    expect(readFileSync(mine, "utf8")).toBe(before);
    // The remedy works: the record removed, the person trusts what they looked at.
    rmSync(mine);
    writeFileSync(join(p.root, "lazy.toml"), upstream(up.good.url));
    await p.ok(["trust", "--yes"]);
    expect(existsSync(mine)).toBe(true);
    expect(await p.run(["task", "list"]).then((s) => s.code)).toBe(0);
    expect(up.attacker.received).toEqual([]);
  }, 120_000);
});
