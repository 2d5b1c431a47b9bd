/**
 * Attacks on what the daemon runs by and how the CLI finds it (issue 28, Deliver 4 and 6): a
 * hostile local process racing a launch against an edit of lazy.toml, a daemon.json another
 * user wrote to get the token or have lazy signal a process of its choosing, and problem text
 * with control bytes in it. Each asserts the refusal and that nothing reached the attacker.
 *
 * Against the code before this change (f2215c3^, run with these tests copied into a build of
 * it): the withdrawn upstream got the key (the trust record was only polled each second); the
 * forged daemon.json got the token, and `lazy daemon stop` killed the process it named; a broken
 * or untrusted lazy.toml was not mentioned at all. The race with an untrusted edit was refused
 * before too (the daemon never applies one): it guards the new check-at-each-request path.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { edit, oneRequest, upstream } from "../helpers/fixtures";
import { cleanupAll, isAlive, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-FRESHATTACK-" + "f".repeat(69) + "AA";
let good: Mock.MockProvider;
let attacker: Mock.MockProvider;

beforeAll(async () => ([good, attacker] = await Promise.all([Mock.anthropic(), Mock.anthropic()])));
afterAll(() => cleanupAll(good, attacker));

// C0 but tab and newline, DEL, C1: what a terminal would obey.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control bytes is the point
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;
const posts = (m: Mock.MockProvider) => m.received.filter((r) => r.method === "POST").map((r) => r.headers["x-api-key"]);

/** A launch's first model request: a placeholder grant (what start, chat and ask mint), then one request through the proxy. */
const launch = (p: Project) => oneRequest(p);

describe("a hostile local process races a launch against lazy.toml", () => {
  test("an upstream the person just moved away from (edit, lazy trust) gets nothing from a launch the moment after", async () => {
    // The attacker's server is the one the trusted config used to name.
    const p = new Project({ toml: upstream(attacker.url) });
    await p.setCredential("anthropic", KEY);
    edit(p, upstream(good.url));
    // The daemon's watch has seen the edit (untrusted, so not applied) before the person trusts it.
    await until(() => p.log().includes("lazy.toml changed and is not trusted"), 10_000, "the daemon to see the edit");
    attacker.reset();
    good.reset();
    expect(p.trust().code).toBe(0);
    // A launch racing the trust: the daemon must not still be on the withdrawn upstream.
    expect(await launch(p)).toBe(200);
    expect(attacker.received).toEqual([]);
    expect(posts(good)).toEqual([KEY]);
  }, 60_000);

  test("an untrusted edit made just before a launch is never used: the trusted upstream gets the request, the CLI says it is untrusted", async () => {
    const p = new Project({ toml: `${upstream(good.url)}\n[profiles.sneaky]\nharness = "claude"\n` });
    await p.setCredential("anthropic", KEY);
    attacker.reset();
    good.reset();
    edit(p, `${upstream(attacker.url)}\n[profiles.sneaky]\nharness = "claude"\n\n[profiles.evil]\nharness = "claude"\n`);
    expect(await launch(p)).toBe(200);
    expect(attacker.received).toEqual([]);
    expect(posts(good)).toEqual([KEY]);
    // A launch by a profile only the untrusted edit defines is refused, and says why.
    const add = await p.run(["task", "add", "exfiltrate", "--profile", "evil"]);
    expect(add.code).not.toBe(0);
    expect(add.stderr).toContain(`${p.root}/lazy.toml is changed and not trusted`);
    expect(add.stderr).toContain("lazy.toml:2:1 proxy.upstreams.anthropic — changed since you trusted it");
    expect(add.stderr).toContain("Until then the daemon keeps using the last trusted config");
    expect(attacker.received).toEqual([]);
  }, 60_000);
});

describe("a daemon.json another local user wrote", () => {
  test("is refused: no token goes to the port it names, and lazy daemon stop signals no process it names", async () => {
    const p = new Project();
    await p.ok(["task", "add", "mine"]);
    const real = readFileSync(join(p.stateDir, "daemon.json"), "utf8");
    // The other user's listener, posing as an old daemon, and a process of ours it wants killed.
    const seen: string[] = [];
    const decoy = Bun.spawn(["sleep", "300"], { stdout: "ignore", stderr: "ignore" });
    const hostile = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch(req) {
        seen.push(`${req.method} ${new URL(req.url).pathname} ${req.headers.get("authorization") ?? ""}`);
        return Response.json(
          { ok: true, pid: decoy.pid, version: "0.0.0", busy: { turns: 0, requests: 0 } },
          { headers: { "x-lazy-pid": String(decoy.pid) } },
        );
      },
    });
    const forged = join(p.stateDir, "daemon.json");
    try {
      writeFileSync(
        forged,
        JSON.stringify({
          pid: decoy.pid,
          version: "0.0.0",
          root: p.root,
          startedAt: new Date().toISOString(),
          api: { host: "127.0.0.1", port: hostile.port },
          web: false,
          proxy: null,
        }),
      );
      chownSync(forged, 4242, 4242);
      for (const args of [
        ["task", "list"],
        ["daemon", "stop"],
        ["daemon", "status"],
      ]) {
        const r = await p.run(args);
        expect(r.code, `lazy ${args.join(" ")}`).not.toBe(0);
        expect(r.stderr).toContain(`${forged} (how lazy finds the project's daemon) is owned by uid 4242, not by you (uid 0)`);
        expect(r.stderr).toContain(`Remove it (rm ${forged})`);
      }
      // Ours, but writable by others: refused the same way.
      chownSync(forged, 0, 0);
      chmodSync(forged, 0o666);
      const r = await p.run(["task", "list"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("is writable by other users, so lazy does not trust it");
      expect(seen).toEqual([]);
      expect(isAlive(decoy.pid)).toBe(true);
    } finally {
      hostile.stop(true);
      decoy.kill();
      writeFileSync(forged, real);
      chmodSync(forged, 0o600);
    }
    // Put back as the daemon wrote it: the real daemon answers, with the task.
    expect((await p.ok(["task", "list"])).stdout).toContain("mine");
  }, 60_000);
});

describe("problem text with control bytes", () => {
  test("a broken lazy.toml whose key and value carry escape sequences is shown escaped in every command's warning, never obeyed", async () => {
    const p = new Project();
    await p.ok(["task", "add", "kept"]);
    // C1 controls (U+009B is CSI, U+009D OSC, U+009C ST): clear the screen, retitle the terminal.
    // JSON quoting (how lazy names an odd key or value) escapes C0 bytes but not these.
    edit(p, '[server]\n"\\u009b2J\\u009d0;owned\\u009c" = 1\n\n[models.roles]\nagent = "\\u009b2J"\n');
    for (const args of [
      ["task", "list"],
      ["task", "list", "--json"],
    ]) {
      const r = await p.run(args);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain("lazy.toml is broken; the daemon keeps using the last good config");
      expect(r.stderr).toContain('lazy.toml:1:1 server."\\x9b2J\\x9d0;owned\\x9c" — unknown key');
      expect(r.stderr).toContain('models.roles.agent — expected the name of a profile; "\\x9b2J" is not defined');
      expect(r.stderr).not.toMatch(CONTROL);
      expect(r.stdout).not.toMatch(CONTROL);
    }
  }, 60_000);
});
