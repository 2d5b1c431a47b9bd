/**
 * Attacks on [[proxy.fallback]] (issue 29): a reroute is where a body and a credential could go
 * somewhere they were not meant to. What a task's agent can send is played here by a process
 * holding the task's placeholder (the proxy treats both the same: the grant is the identity);
 * the config attack is a hostile process rewriting lazy.toml behind lazy's back.
 *
 * On the code before fallbacks: nothing was ever rerouted, so the first two would fail on their
 * first assertion (the agent got the primary's 529, not the fallback's answer); the refusals they
 * go on to check are new with the reroute. The third asserts trust covers the new key (trust.ts
 * is deny by default) and that a running daemon never uses an unapproved fallback.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { edit } from "../helpers/fixtures";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-FALLBACKATTACK-${"k".repeat(66)}AA`;
const BACKUP_KEY = `backup-key-${"b".repeat(40)}`;
let primary: Mock.MockProvider;
let backup: Mock.MockProvider;
let attacker: Mock.MockProvider;
let modelServer: Mock.MockProvider;

beforeAll(async () => {
  [primary, backup, attacker, modelServer] = await Promise.all([Mock.anthropic(), Mock.anthropic(), Mock.anthropic(), Mock.anthropic()]);
  backup.reply = { text: "Answered by the backup." };
});
beforeEach(() => {
  for (const m of [primary, backup, attacker, modelServer]) m.reset();
});
afterAll(() => cleanupAll(primary, backup, attacker, modelServer));

const config = (fallbackUrl: string) =>
  `[proxy.upstreams]\nanthropic = "${primary.url}"\n\n[[proxy.fallback]]\nname = "backup"\nendpoint = "${fallbackUrl}"\nwire = "anthropic"\ncredential = "backup"\n\n[profiles.local]\nharness = "claude"\nendpoint = "${modelServer.url}"\ncredential = "none"\n`;

/** A project with a task whose agent holds a live placeholder (of `profile`). */
async function agent(profile = "claude"): Promise<{ p: Project; placeholder: string; proxyUrl: string }> {
  const p = new Project({ toml: config(backup.url) });
  await p.setCredential("anthropic", KEY);
  await p.setCredential("backup", BACKUP_KEY);
  await p.ok(["task", "add", "Probe the fallback", "--code", "probe", "--profile", profile]);
  const g = await p.grant({ role: "agent", task: "probe", profile });
  return { p, placeholder: g.placeholder, proxyUrl: g.proxyUrl };
}

/** Everything an upstream mock was sent: headers and bodies. */
const seen = (m: Mock.MockProvider) => m.received.map((r) => `${JSON.stringify(r.headers)}\n${r.body}`).join("\n");

describe("attacks on the fallback route", () => {
  test("an agent naming the primary's credential in its headers: the fallback gets its own credential only", async () => {
    const { placeholder, proxyUrl } = await agent();
    primary.behavior = { kind: "status", status: 529 };
    const res = await fetch(`${proxyUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": placeholder,
        authorization: `Bearer ${placeholder}`,
        "x-lazy-credential": "anthropic",
        "x-lazy-fallback-credential": "anthropic",
        "x-lazy-role": "lazy",
        "anthropic-beta": "oauth-2025-04-20",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).content[0].text).toBe("Answered by the backup.");
    const got = backup.received[0]!;
    expect(got.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
    expect(got.headers["x-api-key"]).toBeUndefined();
    expect(got.headers["x-lazy-role"]).toBeUndefined();
    expect(seen(backup)).not.toContain(KEY);
    expect(seen(backup)).not.toContain(placeholder);
  }, 60_000);

  test("an agent cannot make a reroute carry its request where the fallback is not configured to take it", async () => {
    // The primary's model listing is not on a fallback's surface (a server you run: inference only).
    const { p, placeholder, proxyUrl } = await agent();
    primary.behavior = { kind: "status", status: 503 };
    const listing = await fetch(`${proxyUrl}/v1/models`, { headers: { "x-api-key": placeholder } });
    expect(listing.status).toBe(503);
    const message = ((await listing.json()) as any).error.message as string;
    expect(message).toMatch(
      /^every upstream failed: 1\. Anthropic .* answered 503; 2\. fallback backup .* was not tried: it does not forward GET \/v1\/models$/,
    );
    expect(backup.received.length).toBe(0);

    // A header asking for the fallback changes nothing: a primary that answers is the answer.
    primary.behavior = { kind: "ok" };
    const asked = await fetch(`${proxyUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "x-api-key": placeholder,
        "x-lazy-fallback": "backup",
        "x-portkey-provider": "backup",
        "content-type": "application/json",
      },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "secret body" }] }),
    });
    expect(asked.status).toBe(200);
    expect(backup.received.length).toBe(0);

    // A profile's own endpoint failing is not the primary failing: its body never goes to the fallback.
    const local = await p.grant({ role: "agent", task: "probe", profile: "local" });
    modelServer.behavior = { kind: "status", status: 503 };
    const own = await fetch(`${proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": local.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "local secret" }] }),
    });
    expect(own.status).toBe(503);
    expect(modelServer.received.length).toBe(1);
    expect(backup.received.length).toBe(0);
  }, 60_000);

  test("a lazy.toml that adds a fallback behind lazy's back is refused (exit 4), and the running daemon never reroutes to it", async () => {
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${primary.url}"\n` });
    await p.setCredential("anthropic", KEY);
    const g = await p.grant({ role: "host", profile: "claude" });
    // A pull (or a process) adds a fallback pointing at the attacker, credential inferred or named.
    edit(p, `${config(attacker.url)}`);
    // The running daemon keeps its last trusted config, and every command says so.
    const r = await p.run(["stats", "audit"]);
    expect(r.stderr).toMatch(/lazy\.toml:4:1 proxy\.fallback — added since you trusted it/);
    expect(r.stderr).toContain("the daemon keeps using the last trusted config");
    // So the primary's 529 reaches the agent unchanged, and the attacker sees nothing.
    primary.behavior = { kind: "status", status: 529 };
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(529);
    expect(primary.received.length).toBe(1);
    // A new daemon for the changed file is refused before it starts, naming the key.
    await p.ok(["daemon", "stop"]);
    const start = await p.run(["daemon", "start"]);
    expect(start.code).toBe(4);
    expect(start.stderr).toContain("proxy.fallback");
    expect(start.stderr).toContain("lazy trust");
    expect(attacker.received.length).toBe(0);
  }, 60_000);
});
