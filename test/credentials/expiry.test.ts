/**
 * OAuth expiry before the 401: `lazy auth set anthropic` takes Claude Code's OAuth JSON as it is
 * (its .credentials.json), stores the access token and keeps its expiry; a token that lapses
 * within a day shows in `lazy doctor`, `lazy watch`, `lazy auth list` and as a desktop
 * notification, with the command that replaces it, before any request on it has failed. The
 * dashboard's Home shows it in real headless Chromium.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM } from "../dashboard/browser";
import { BIN, cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const TOKEN = "sk-ant-oat01-REALEXPIRY-" + "e".repeat(60);
let anthropic: Mock.MockProvider | undefined;

afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
});

const claudeJson = (expiresAt: number) =>
  JSON.stringify(
    {
      claudeAiOauth: {
        accessToken: TOKEN,
        refreshToken: "sk-ant-ort01-REFRESH-" + "r".repeat(40),
        expiresAt,
        scopes: ["user:inference"],
        subscriptionType: "max",
      },
    },
    null,
    2,
  );

/** A notify-send that writes its arguments to a file (the daemon inherits the CLI's PATH). */
function fakeNotifySend(): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), "lazy-notify-"));
  const log = join(dir, "calls");
  writeFileSync(join(dir, "notify-send"), `#!/bin/sh\nprintf '%s\\n' "$@" >> ${log}\n`);
  chmodSync(join(dir, "notify-send"), 0o755);
  return { dir, log };
}

describe("OAuth expiry", () => {
  test("a token lapsing in 3 h: stored from Claude Code's JSON, warned of in doctor, watch, auth list, Home and a notification before any request fails", async () => {
    anthropic = await Mock.anthropic();
    const fake = fakeNotifySend();
    const p = new Project({
      toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n\n[notify]\ndesktop = true\n`,
      env: { PATH: `${fake.dir}:${process.env.PATH}` },
    });
    const expiresAt = Date.now() + 3 * 3600_000 + 60_000;
    const set = await p.ok(["auth", "set", "anthropic"], { stdin: claudeJson(expiresAt) });
    expect(set.stdout).toContain("Stored anthropic (oauth-token, …eeee)");
    expect(set.stdout).toContain(`It expires at ${new Date(expiresAt).toISOString()}`);
    expect(set.stderr).not.toContain("does not look like");
    // The access token is what is stored: the proxy sends it, and only it.
    const listed = (await p.json<any>(["auth", "list"])).credentials;
    expect(listed).toEqual([
      expect.objectContaining({ name: "anthropic", kind: "oauth-token", expiresAt: new Date(expiresAt).toISOString() }),
    ]);
    const text = (await p.ok(["auth", "list"])).stdout;
    expect(text).toContain(new Date(expiresAt).toISOString());
    expect(text).toContain('! anthropic: The OAuth token "anthropic" expires in 3 h');
    const stored = readFileSync(join(p.home, "credentials", "credentials.json"), "utf8");
    expect(stored).toContain(TOKEN);
    expect(stored).not.toContain("sk-ant-ort01-");

    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout).toMatch(/warn {2}secrets {2}The OAuth token "anthropic" expires in 3 h( 1 min)? \(/);
    expect(doctor.stdout).toContain(
      "make a new token (claude setup-token; or log in with claude again) and store it: lazy auth set anthropic",
    );

    // lazy watch says it first thing.
    const proc = Bun.spawn([BIN, "watch"], { cwd: p.root, env: p.fullEnv(), stdout: "pipe", stderr: "pipe" });
    let out = "";
    const reader = (async () => {
      for await (const c of proc.stdout) out += new TextDecoder().decode(c);
    })();
    await until(() => out.includes("expiring: The OAuth token"), 10_000, "lazy watch to show the expiry");
    expect(out).toContain('-- expiring: The OAuth token "anthropic" expires in 3 h');
    // A token stored while watch runs is said as it comes.
    const sooner = Date.now() + 2 * 3600_000 + 60_000;
    await p.ok(["auth", "set", "anthropic"], { stdin: claudeJson(sooner) });
    await until(() => out.includes("expires in 2 h"), 10_000, "lazy watch to show the new expiry");
    proc.kill();
    await reader.catch(() => {});

    // A desktop notification, once.
    await until(() => Bun.file(fake.log).exists(), 10_000, "the desktop notification");
    const calls = readFileSync(fake.log, "utf8");
    expect(calls).toContain("lazy: credential expiring");
    expect(calls).toContain('The OAuth token "anthropic" expires in 3 h');

    // No request failed to tell any of this: the token still works now.
    const g = await p.grant({ role: "host", profile: "claude" });
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${g.placeholder}`, "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    expect(anthropic.received.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`);

    // The dashboard's Home shows the banner.
    const url = (await p.ok(["dashboard"])).stdout.trim();
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await page.waitForSelector('#expiry [data-credential="anthropic"]', { timeout: 10_000 });
      expect(await page.locator("#expiry").textContent()).toContain("lazy auth set anthropic");
    } finally {
      await browser.close();
    }
  });

  test("a lapsed token blocks in doctor; a plain key stored over it forgets the expiry; JSON of another shape is refused", async () => {
    const p = new Project();
    await p.ok(["auth", "set", "anthropic"], { stdin: claudeJson(Date.now() - 60_000) });
    const doctor = await p.run(["doctor"]);
    expect(doctor.code).not.toBe(0);
    expect(doctor.stdout).toMatch(/FAIL {2}secrets {2}The OAuth token "anthropic" expired at \S+: the provider refuses requests on it\./);
    await p.ok(["auth", "set", "anthropic"], { stdin: "sk-ant-oat01-NEWTOKEN-" + "n".repeat(60) });
    expect((await p.run(["doctor"])).stdout).not.toContain("The OAuth token");
    expect((await p.json<any>(["auth", "list"])).credentials[0].expiresAt).toBeUndefined();
    const wrong = await p.run(["auth", "set", "anthropic"], { stdin: '{"token": "x"}' });
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("is JSON but not Claude Code's OAuth credentials");
  });
});
