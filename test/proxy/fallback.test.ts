/**
 * [[proxy.fallback]] through the daemon's proxy, against real mock providers on loopback: a
 * primary that fails before its first byte hands the request to the next fallback whose `on`
 * lists the failure, with that fallback's own credential and model; each hop is an audit row
 * and a watch line; an error that survives every hop names every party tried. A short rate
 * limit and a started stream are never rerouted; without a fallback that takes the failure the
 * agent gets the provider's answer unchanged.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { BIN, cleanupAll, Project } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-PRIMARY-${"p".repeat(75)}AA`;
const BACKUP_KEY = `backup-key-${"b".repeat(40)}`;
const SECOND_KEY = `second-key-${"s".repeat(40)}`;
const BODY = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] });

let primary: Mock.MockProvider;
let backup: Mock.MockProvider;
let second: Mock.MockProvider;

beforeAll(async () => {
  [primary, backup, second] = await Promise.all([Mock.anthropic(), Mock.anthropic(), Mock.anthropic()]);
  backup.reply = { text: "Answered by the backup." };
});
beforeEach(() => {
  for (const m of [primary, backup, second]) m.reset();
});
afterAll(() => cleanupAll(primary, backup, second));

const fallback = (name: string, url: string, extra = "") =>
  `[[proxy.fallback]]\nname = "${name}"\nendpoint = "${url}"\nwire = "anthropic"\n${extra}`;

/** A project whose primary is the `primary` mock, with these fallbacks and their keys stored. */
async function project(fallbacks: string): Promise<{ p: Project; placeholder: string; proxyUrl: string }> {
  const p = new Project({ toml: `[proxy]\nfirst_byte_timeout_s = 5\n\n[proxy.upstreams]\nanthropic = "${primary.url}"\n\n${fallbacks}` });
  await p.setCredential("anthropic", KEY);
  await p.setCredential("backup", BACKUP_KEY);
  await p.setCredential("second", SECOND_KEY);
  const g = await p.grant({ role: "host", profile: "claude" });
  return { p, placeholder: g.placeholder, proxyUrl: g.proxyUrl };
}

async function ask(proxyUrl: string, placeholder: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${proxyUrl}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": placeholder, "content-type": "application/json", "anthropic-version": "2023-06-01", ...headers },
    body: BODY,
  });
  return { status: res.status, body: (await res.json()) as any };
}

const rows = async (p: Project) => (await p.json(["stats", "audit"])).rows as any[];

/** Every header value a mock received, joined: where a credential would show. */
const allHeaders = (m: Mock.MockProvider) => m.received.map((r) => JSON.stringify(r.headers) + r.body).join("\n");

describe("[[proxy.fallback]]", () => {
  test("primary 529, fallback 200: the agent gets the fallback's answer, asked with its own credential and model; audit and watch show both hops", async () => {
    const { p, placeholder, proxyUrl } = await project(fallback("backup", backup.url, 'credential = "backup"\nmodel = "backup-model-1"\n'));
    primary.behavior = { kind: "status", status: 529 };
    const sent = performance.now();
    const r = await ask(proxyUrl, placeholder);
    const whole = performance.now() - sent;
    expect(r.status).toBe(200);
    expect(r.body.content[0].text).toBe("Answered by the backup.");

    // The primary saw its own key; the fallback saw its own, as Bearer, and the model it names.
    expect(primary.received[0]!.headers["x-api-key"]).toBe(KEY);
    const got = backup.received[0]!;
    expect(got.headers.authorization).toBe(`Bearer ${BACKUP_KEY}`);
    expect(got.headers["x-api-key"]).toBeUndefined();
    expect(JSON.parse(got.body).model).toBe("backup-model-1");
    expect(JSON.parse(got.body).messages).toEqual([{ role: "user", content: "hi" }]);
    expect(allHeaders(backup)).not.toContain(KEY);
    expect(allHeaders(backup)).not.toContain(placeholder);

    // A row per hop: the primary's 529 says where it went; the fallback's names its credential.
    const [first, then] = (await rows(p)).slice(-2);
    expect(first).toMatchObject({ hop: 0, status: 529, credential: "anthropic", upstream: primary.url });
    expect(first.note).toMatch(
      /^Anthropic \(127\.0\.0\.1:\d+, profile claude, credential anthropic\) answered 529; rerouted to fallback backup$/,
    );
    expect(then).toMatchObject({ hop: 1, status: 200, credential: "backup", upstream: backup.url, note: null });
    // lazy's own time is kept on each row, both ways.
    // lazy's own part of it is a part of what the client waited, start to end.
    for (const x of [first, then]) expect(x.lazyInMs).toBeGreaterThanOrEqual(0);
    expect(then.lazyOutMs).toBeGreaterThanOrEqual(0);
    expect(first.lazyInMs + then.lazyInMs + then.lazyOutMs).toBeLessThanOrEqual(Math.ceil(whole));
    const table = (await p.ok(["stats", "audit"])).stdout;
    expect(table).toContain("LAZY in/out");
    expect(table).toContain(`fallback hop 1 (${backup.url})`);

    // Watch shows each hop.
    const w = Bun.spawn([BIN, "watch", "--since", "1h"], { cwd: p.root, env: p.fullEnv(), stdout: "pipe" });
    setTimeout(() => w.kill(), 2_000);
    const lines = (await new Response(w.stdout).text()).split("\n").filter((l) => l.includes("net> "));
    expect(lines.some((l) => / POST \/v1\/messages 529 \d+ms {2}\(Anthropic .* answered 529; rerouted to fallback backup\)$/.test(l))).toBe(
      true,
    );
    expect(lines.some((l) => l.includes(` POST /v1/messages 200 `) && l.endsWith(`[fallback hop 1: ${backup.url}]`))).toBe(true);
  }, 60_000);

  test("primary resets every connection, two fallbacks answer 503: the agent's error names all three parties and how each failed", async () => {
    const { p, placeholder, proxyUrl } = await project(
      fallback("backup", backup.url, 'credential = "backup"\n') + fallback("second", second.url, 'credential = "second"\n'),
    );
    primary.behavior = { kind: "reset" };
    backup.behavior = { kind: "status", status: 503 };
    second.behavior = { kind: "status", status: 503 };
    const r = await ask(proxyUrl, placeholder);
    expect(r.status).toBe(503);
    const message = r.body.error.message as string;
    expect(message).toMatch(
      /^every upstream failed: 1\. Anthropic \(127\.0\.0\.1:\d+, profile claude, credential anthropic\) reset the connection \d+ ms into the request \(retried once\); 2\. fallback backup \(127\.0\.0\.1:\d+, profile claude, credential backup\) answered 503; 3\. fallback second \(127\.0\.0\.1:\d+, profile claude, credential second\) answered 503$/,
    );
    // The one retry on a reset, then each fallback once, each with its own key.
    expect(primary.received.length).toBe(2);
    expect(backup.received.map((x) => x.headers.authorization)).toEqual([`Bearer ${BACKUP_KEY}`]);
    expect(second.received.map((x) => x.headers.authorization)).toEqual([`Bearer ${SECOND_KEY}`]);
    const hops = (await rows(p)).slice(-3);
    expect(hops.map((x) => [x.hop, x.status, x.credential])).toEqual([
      [0, 502, "anthropic"],
      [1, 503, "backup"],
      [2, 503, "second"],
    ]);
  }, 60_000);

  test("a fallback whose credential is not stored is not tried: the error says so in the request path's words, with the remedy", async () => {
    const { placeholder, proxyUrl } = await project(fallback("backup", backup.url, 'credential = "unstored"\n'));
    primary.behavior = { kind: "status", status: 503 };
    const r = await ask(proxyUrl, placeholder);
    expect(r.status).toBe(503);
    expect(r.body.error.message).toMatch(
      /^every upstream failed: 1\. Anthropic \(.*\) answered 503; 2\. fallback backup \(127\.0\.0\.1:\d+\) was not tried: lazy's proxy has no credential "unstored" for fallback backup: store it with lazy auth set unstored\.$/,
    );
    expect(backup.received.length).toBe(0);
  }, 60_000);

  test("a short rate limit is not rerouted; a quota refusal is when `on` lists quota", async () => {
    const { placeholder, proxyUrl } = await project(fallback("backup", backup.url, 'credential = "backup"\non = ["5xx", "quota"]\n'));
    primary.behavior = { kind: "status", status: 429, headers: { "retry-after": "5" } };
    const short = await ask(proxyUrl, placeholder);
    expect(short.status).toBe(429);
    expect(short.body.error.type).toBe("rate_limit_error"); // the provider's answer, unchanged
    expect(backup.received.length).toBe(0);

    const reset = Math.floor(Date.now() / 1000) + 3 * 3600;
    primary.behavior = {
      kind: "status",
      status: 429,
      headers: { "anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": String(reset) },
    };
    const quota = await ask(proxyUrl, placeholder);
    expect(quota.status).toBe(200);
    expect(quota.body.content[0].text).toBe("Answered by the backup.");
    expect(backup.received.length).toBe(1);
  }, 60_000);

  test("a failure no fallback lists, and a stream that started, reach the agent unchanged", async () => {
    const { p, placeholder, proxyUrl } = await project(fallback("backup", backup.url, 'credential = "backup"\non = ["connect"]\n'));
    primary.behavior = { kind: "status", status: 529 };
    const r = await ask(proxyUrl, placeholder);
    expect(r.status).toBe(529);
    expect(r.body.error.type).toBe("overloaded_error");
    expect(r.body.error.message).toBe("Overloaded"); // the mock's own words

    // A stream cut after its first bytes reached the agent: never switched.
    primary.behavior = { kind: "reset-mid-stream" };
    const res = await fetch(`${proxyUrl}/v1/messages`, {
      method: "POST",
      headers: { "x-api-key": placeholder, "content-type": "application/json" },
      body: JSON.stringify({ ...JSON.parse(BODY), stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text().catch(() => "");
    expect(text).not.toContain("Answered by the backup.");
    expect(backup.received.length).toBe(0);
    expect((await rows(p)).every((x) => x.hop === 0)).toBe(true);
  }, 60_000);

  test("a primary that sends no headers in time, and one that cannot be reached, go to the fallback (the default `on`)", async () => {
    const p = new Project({
      toml: `[proxy]\nfirst_byte_timeout_s = 1\n\n[proxy.upstreams]\nanthropic = "${primary.url}"\n\n${fallback("backup", backup.url, 'credential = "backup"\n')}`,
    });
    await p.setCredential("anthropic", KEY);
    await p.setCredential("backup", BACKUP_KEY);
    const g = await p.grant({ role: "host", profile: "claude" });
    primary.behavior = { kind: "hang" };
    const slow = await ask(g.proxyUrl, g.placeholder);
    expect(slow.status).toBe(200);
    expect(slow.body.content[0].text).toBe("Answered by the backup.");
    const [timedOut] = (await rows(p)).slice(-2);
    expect(timedOut.note).toMatch(/^Anthropic \(.*\) sent no response headers \d+ ms into the request; rerouted to fallback backup$/);

    // A port nothing listens on (a closed mock's).
    const gone = await Mock.anthropic();
    await gone.close();
    const q = new Project({
      toml: `[proxy.upstreams]\nanthropic = "${gone.url}"\n\n${fallback("backup", backup.url, 'credential = "backup"\n')}`,
    });
    await q.setCredential("anthropic", KEY);
    await q.setCredential("backup", BACKUP_KEY);
    const h = await q.grant({ role: "host", profile: "claude" });
    const refused = await ask(h.proxyUrl, h.placeholder);
    expect(refused.status).toBe(200);
    const [unreached] = (await rows(q)).slice(-2);
    expect(unreached.note).toMatch(/^Anthropic \(.*\) could not be reached .*; rerouted to fallback backup$/);
    expect(backup.received.map((x) => x.headers.authorization)).toEqual([`Bearer ${BACKUP_KEY}`, `Bearer ${BACKUP_KEY}`]);
  }, 60_000);

  test('a fallback declaring credential = "none" on an origin that already gets a credential is refused at start, naming both', async () => {
    const p = new Project({
      toml: `[proxy.upstreams]\nanthropic = "${primary.url}"\n\n${fallback("local", primary.url, 'credential = "none"\n')}`,
    });
    const r = await p.run(["auth", "set", "anthropic"], { stdin: KEY });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      `fallback local (proxy.fallback[0]) declares credential = "none" for ${primary.url}, which the Anthropic upstream already sends the "anthropic" credential to`,
    );
    expect(primary.received.length).toBe(0);
  }, 60_000);
});
