/**
 * Issue 36's npm and command-source proofs: a private npm registry (verdaccio, token auth,
 * `@acme/private-lib` published; test/helpers/verdaccio.ts) is a `[[service]]` of shape "npm"
 * whose token comes from a command the daemon runs on the host: a stand-in for `gh auth token`
 * in a temp folder of the test's, which prints the registry's token and appends a line to a
 * counter file each time it runs, kept for `ttl = "10s"`. A task's agent (real Claude Code in a
 * real container, told by a mock provider what to run) runs `npm install @acme/private-lib` in
 * its worktree with npm's own client, reading the .npmrc lazy gives (NPM_CONFIG_USERCONFIG), and
 * commits what happened. The registry's log shows the requests authenticated as its user; the
 * container held only a placeholder; the command ran once for the several requests of one
 * install, and again for a second turn's install after its lifetime. A second service whose
 * command exits non-zero makes its install fail, and the task's events and lazy doctor say why.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bash, containerProject, launched, settled, teardown } from "../helpers/fixtures";
import { type Project, sh, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";
import { type Registry, startRegistry } from "../helpers/verdaccio";

const KEY = `sk-ant-api03-BROKERNPM-${"n".repeat(69)}AA`;
const CODE = "npm1";
const BROKEN = "npm-broken.lazy.test";
const TTL_MS = 10_000;

let mock: Mock.MockProvider;
let reg: Registry;
let p: Project;
let dir: string;
/** The real token as a pattern that does not match its own text: `abc[d]ef…`. */
let pattern: string;
/** What each run of a command appended: one line a run, its time in ms. */
const runs = (name: string) => {
  const f = join(dir, `${name}.count`);
  return existsSync(f) ? readFileSync(f, "utf8").split("\n").filter(Boolean).map(Number) : [];
};
const show = (file: string) => sh(p.root, `git show lazy/${CODE}:out/${file}`).out;

/** The agent's install of the private package in its worktree, with a cache of its own (every request goes to the registry). */
const install = (n: number) =>
  [
    "W=$(pwd); mkdir -p out; rm -rf node_modules package-lock.json",
    `npm install --no-audit --no-fund --cache /tmp/npm-cache-${n} @acme/private-lib > out/install-${n}.txt 2>&1; echo "exit $?" >> out/install-${n}.txt`,
    `cat node_modules/@acme/private-lib/package.json > out/installed-${n}.json 2>&1`,
  ].join("; ");

beforeAll(async () => {
  mock = await Mock.anthropic();
  reg = await startRegistry();
  pattern = `${reg.token.slice(0, 4)}[${reg.token[4]}]${reg.token.slice(5)}`;
  dir = mkdtempSync(join(tmpdir(), "lazy-npm-command-"));
  writeFileSync(join(dir, "token"), `${reg.token}\n`, { mode: 0o600 });
  // The stand-ins for `gh auth token`: one prints the token, one fails as a logged-out CLI does.
  writeFileSync(join(dir, "token.sh"), `#!/bin/sh\ndate +%s%3N >> "${dir}/token.count"\ncat "${dir}/token"\n`);
  writeFileSync(
    join(dir, "broken.sh"),
    `#!/bin/sh\ndate +%s%3N >> "${dir}/broken.count"\necho "not logged in to ${BROKEN}: run acme-login first" >&2\nexit 3\n`,
  );
  chmodSync(join(dir, "token.sh"), 0o755);
  chmodSync(join(dir, "broken.sh"), 0o755);
  p = await containerProject(mock, KEY, {
    env: { LAZY_RESOLVE: `${reg.name}=127.0.0.1,${BROKEN}=127.0.0.1`, NODE_EXTRA_CA_CERTS: reg.caFile },
    extra: [
      "[[service]]",
      'shape = "npm"',
      `hosts = ["${reg.name}:${reg.port}"]`,
      `url = "${reg.url}"`,
      'scopes = ["@acme"]',
      `command = ["${dir}/token.sh"]`,
      'ttl = "10s"',
      "",
      "[[service]]",
      'shape = "npm"',
      'name = "broken"',
      `hosts = ["${BROKEN}:${reg.port}"]`,
      `url = "https://${BROKEN}:${reg.port}/"`,
      'scopes = ["@broken"]',
      `command = ["${dir}/broken.sh"]`,
      'ttl = "10s"',
      "",
    ].join("\n"),
  });
  p.trust();
  mock.reply = bash(
    "installed.",
    [
      install(1),
      // The failing source: npm's retries off, so its one answer is what it shows.
      `npm install --no-audit --no-fund --fetch-retries=0 --cache /tmp/npm-cache-b @broken/thing > out/broken.txt 2>&1; echo "exit $?" >> out/broken.txt`,
      'cat "$NPM_CONFIG_USERCONFIG" > out/npmrc.txt 2>&1; env > out/env.txt',
      `sudo grep -rlsI --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev -e '${pattern}' / > out/found.txt`,
      `sudo sh -c "cat /proc/[0-9]*/environ | tr '\\\\0' '\\\\n' | grep -c -e '${pattern}'" > out/environ.txt`,
      'cd "$W" && git add -f out && git commit -qm "first install"',
    ].join("; "),
    "install the private package",
    { timeout: 600_000 },
  );
  await launched(p, CODE, "install @acme/private-lib");
  await settled(p, CODE);
}, 600_000);

afterAll(async () => {
  await teardown(p, mock);
  await reg?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a task's npm install through the broker, its token from a host command", () => {
  test("npm install of the private scoped package succeeded, at the published version", () => {
    expect(show("install-1.txt")).toContain("exit 0");
    const installed = JSON.parse(show("installed-1.json"));
    expect(installed.name).toBe(reg.pkg.name);
    expect(installed.version).toBe(reg.pkg.version);
  });

  test("the registry saw the requests authenticated as its user", () => {
    const authed = reg.log().match(/200, user: acme-dev\([^)]*\), req: 'GET \/@acme(%2f|\/)private-lib/gi) ?? [];
    // The packument and the tarball, both with the real token.
    expect(authed.length).toBeGreaterThanOrEqual(2);
  });

  test("the container held only a placeholder: the .npmrc's token, its environment, its files", () => {
    const npmrc = show("npmrc.txt");
    expect(npmrc).toContain(`@acme:registry=${reg.url}`);
    expect(npmrc).toMatch(new RegExp(`//${reg.name}:${reg.port}/:_authToken=npm_lazy[A-Za-z0-9]+`));
    expect(npmrc).not.toContain(reg.token);
    expect(show("env.txt")).toContain("NPM_CONFIG_USERCONFIG=/lazy/broker/npmrc");
    expect(show("env.txt")).not.toContain(reg.token);
    expect(show("found.txt").trim()).toBe("");
    expect(show("environ.txt").trim()).toBe("0");
  });

  test("the command ran on the host, once for the several requests of one install", async () => {
    expect(runs("token")).toHaveLength(1);
    const r = await p.run(["stats", "audit", "--json", "--limit", "1000"]);
    const rows = JSON.parse(r.stdout).rows.filter((x: any) => x.role === "broker" && x.profile === "npm" && x.status === 200);
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(JSON.stringify(rows)).not.toContain(reg.token);
  });

  test("a command that exits non-zero fails the install, named in the task's events and lazy doctor", async () => {
    expect(show("broken.txt")).not.toContain("exit 0");
    expect(runs("broken").length).toBeGreaterThanOrEqual(1);
    const logs = await p.run(["logs", CODE]);
    expect(logs.stdout).toMatch(/!! service broken: the command ".*broken\.sh" for service broken exited with 3: not logged in/);
    const doctor = await p.run(["doctor"]);
    const out = `${doctor.stdout}${doctor.stderr}`;
    expect(out).toMatch(/service broken: .*last try failed: the command ".*broken\.sh" for service broken exited with 3: not logged in/);
    // The working service is reported as such.
    expect(out).toMatch(/service npm: npm\.lazy\.test:\d+ brokered, token from command .*token\.sh; last token /);
  });

  test("after its lifetime the command runs again for the next turn's install", async () => {
    const first = runs("token")[0]!;
    // A bounded wait on the clock: past the token's 10 s lifetime.
    await until(() => Date.now() > first + TTL_MS + 1_000 || undefined, 60_000, "the command's token to lapse");
    mock.answer(
      bash(
        "installed again.",
        [install(2), 'cd "$W" && git add -f out && git commit -qm "second install"'].join("; "),
        "install the private package again",
        { timeout: 600_000 },
      ),
    );
    await p.ok(["send", CODE, "install it once more"]);
    await settled(p, CODE);
    expect(show("install-2.txt")).toContain("exit 0");
    expect(JSON.parse(show("installed-2.json")).version).toBe(reg.pkg.version);
    const again = runs("token");
    expect(again).toHaveLength(2);
    expect(again[1]! - again[0]!).toBeGreaterThanOrEqual(TTL_MS - Math.min(60_000, TTL_MS / 10));
  }, 600_000);
});
