/**
 * The real key and a company proxy (issue 35, finding 2): the daemon runs with HTTP_PROXY and
 * HTTPS_PROXY naming a forward proxy on this host's loopback that records every byte it gets
 * (test/helpers/company-proxy.ts) and NO_PROXY empty, as on a company laptop. An agent holding
 * a task's placeholder calls the primary upstream, a profile's endpoint and (through a primary
 * that fails) a fallback, each a real mock provider on 127.0.0.1 with its own stored key.
 *
 * On the code before this: Bun's fetch carried every one of them through the company proxy in
 * absolute form, real key in clear text (the proxy could even deliver them here: it reaches
 * 127.0.0.1), and a plain-http upstream on another host went the same way. Now loopback is
 * always direct (the proxy sees no request at all), and a plain-http upstream the proxy would
 * carry is refused with the reason before anything leaves: the proxy sees nothing, and neither
 * does that upstream.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { type CompanyProxy, companyProxy } from "../helpers/company-proxy";
import { cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-CORPPROXY-${"k".repeat(70)}AA`;
const LOCAL_KEY = `local-key-${"l".repeat(40)}`;
const BACKUP_KEY = `backup-key-${"b".repeat(40)}`;
const REMOTE_KEY = `remote-key-${"r".repeat(40)}`;
/** A host only the company proxy can resolve (to `remote` on its side). */
const REMOTE_HOST = "models.corp.example";

let corp: CompanyProxy;
let primary: Mock.MockProvider;
let local: Mock.MockProvider;
let backup: Mock.MockProvider;
let remote: Mock.MockProvider;

beforeAll(async () => {
  [primary, local, backup, remote] = await Promise.all([Mock.anthropic(), Mock.anthropic(), Mock.anthropic(), Mock.anthropic()]);
  backup.reply = { text: "Answered by the backup." };
  corp = companyProxy("bob", `pw-${crypto.randomUUID()}`, { [REMOTE_HOST]: remote.port });
});
beforeEach(() => {
  for (const m of [primary, local, backup, remote]) m.reset();
});
afterAll(async () => {
  corp?.stop();
  await cleanupAll(primary, local, backup, remote);
});

const behindCorp = () => ({
  HTTP_PROXY: corp.url,
  http_proxy: corp.url,
  HTTPS_PROXY: corp.url,
  https_proxy: corp.url,
  NO_PROXY: "",
  no_proxy: "",
});

const config = () =>
  `[proxy.upstreams]\nanthropic = "${primary.url}"\n\n` +
  `[[proxy.fallback]]\nname = "backup"\nendpoint = "${backup.url}"\nwire = "anthropic"\ncredential = "backup"\n\n` +
  `[profiles.local]\nharness = "claude"\nendpoint = "${local.url}"\ncredential = "local"\n\n` +
  `[profiles.remote]\nharness = "claude"\nendpoint = "http://${REMOTE_HOST}:${remote.port}"\ncredential = "remote"\n`;

let project: Project | undefined;
async function agentProject(): Promise<Project> {
  if (project) return project;
  const p = new Project({ toml: config(), env: behindCorp() });
  await p.setCredential("anthropic", KEY);
  await p.setCredential("local", LOCAL_KEY);
  await p.setCredential("backup", BACKUP_KEY);
  await p.setCredential("remote", REMOTE_KEY);
  await p.ok(["task", "add", "Call the models", "--code", "probe"]);
  project = p;
  return p;
}

/** One model request as the task's agent on `profile`'s placeholder. */
async function ask(profile: string): Promise<Response> {
  const p = await agentProject();
  const g = await p.grant({ role: "agent", task: "probe", profile });
  return fetch(`${g.proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": g.placeholder, "content-type": "application/json", "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 5, messages: [{ role: "user", content: "private prompt" }] }),
  });
}

const everything = () => corp.received.join("");

describe("a company proxy in the daemon's environment", () => {
  test("sees no request for the primary upstream on loopback; the request goes direct with the real key", async () => {
    const at = corp.received.length;
    const res = await ask("claude");
    expect(res.status).toBe(200);
    expect(primary.received).toHaveLength(1);
    expect(primary.received[0]!.headers["x-api-key"]).toBe(KEY);
    expect(corp.received.slice(at)).toEqual([]);
    expect(everything()).not.toContain(KEY);
  }, 120_000);

  test("sees no request for a profile's endpoint on loopback", async () => {
    const at = corp.received.length;
    const res = await ask("local");
    expect(res.status).toBe(200);
    expect(local.received).toHaveLength(1);
    expect(local.received[0]!.headers.authorization).toBe(`Bearer ${LOCAL_KEY}`);
    expect(corp.received.slice(at)).toEqual([]);
    expect(everything()).not.toContain(LOCAL_KEY);
  }, 60_000);

  test("sees no request for a fallback on loopback when the primary fails", async () => {
    primary.behavior = { kind: "status", status: 529 };
    const at = corp.received.length;
    const res = await ask("claude");
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).content[0].text).toBe("Answered by the backup.");
    expect(backup.received[0]!.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
    expect(corp.received.slice(at)).toEqual([]);
    expect(everything()).not.toContain(BACKUP_KEY);
  }, 60_000);

  test("a plain-http upstream on another host is refused with the reason; neither the proxy nor the upstream sees anything", async () => {
    const at = corp.received.length;
    const res = await ask("remote");
    expect(res.status).toBe(403);
    expect(res.headers.get("x-should-retry")).toBe("false");
    const body = (await res.json()) as any;
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("permission_error");
    const message = body.error.message as string;
    expect(message).toContain(`http://${REMOTE_HOST}:${remote.port}`);
    expect(message).toContain("plain http://");
    expect(message).toContain("https://");
    expect(message).toContain(`add it to NO_PROXY`);
    // The proxy is named without its password.
    expect(message).toContain(corp.url.replace(/\/\/[^@]*@/, "//"));
    expect(message).not.toContain("pw-");
    expect(corp.received.slice(at)).toEqual([]);
    expect(remote.received).toEqual([]);
    expect(everything()).not.toContain(REMOTE_KEY);
    expect(everything()).not.toContain("private prompt");

    // Audited as a refusal, naming the upstream.
    const p = await agentProject();
    let row: any;
    for (let i = 0; i < 50 && !row; i++) {
      const rows = JSON.parse((await p.ok(["stats", "audit", "--json"])).stdout).rows as any[];
      row = rows.find((r) => r.status === 403 && String(r.note).includes("plain http://"));
      if (!row) await Bun.sleep(200);
    }
    expect(row?.upstream).toBe(`http://${REMOTE_HOST}:${remote.port}`);
    expect(row?.profile).toBe("remote");

    // lazy doctor names it too (it reads the same environment).
    const doctor = await p.run(["doctor"]);
    expect(doctor.stdout + doctor.stderr).toContain(`profile remote (http://${REMOTE_HOST}:${remote.port}) is plain http://`);
  }, 60_000);

  test("a plain-http fallback on another host is not tried; the agent is told why, and the proxy sees nothing", async () => {
    const p = new Project({
      toml:
        `[proxy.upstreams]\nanthropic = "${primary.url}"\n\n` +
        `[[proxy.fallback]]\nname = "corpbackup"\nendpoint = "http://${REMOTE_HOST}:${remote.port}"\nwire = "anthropic"\ncredential = "remote"\n`,
      env: behindCorp(),
    });
    await p.setCredential("anthropic", KEY);
    await p.setCredential("remote", REMOTE_KEY);
    await p.ok(["task", "add", "Fall back", "--code", "fallback"]);
    const g = await p.grant({ role: "agent", task: "fallback", profile: "claude" });
    primary.behavior = { kind: "status", status: 529 };
    const at = corp.received.length;
    const res = await fetch(`${g.proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
      body: JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "private prompt" }] }),
    });
    expect(res.status).toBe(529);
    const message = ((await res.json()) as any).error.message as string;
    expect(message).toContain("fallback corpbackup");
    expect(message).toContain("was not tried");
    expect(message).toContain("plain http://");
    expect(primary.received).toHaveLength(1);
    expect(corp.received.slice(at)).toEqual([]);
    expect(remote.received).toEqual([]);
    expect(everything()).not.toContain(REMOTE_KEY);
  }, 60_000);
});
