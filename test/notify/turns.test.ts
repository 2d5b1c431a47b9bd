/**
 * Notifications from real turns: real Claude Code in its task container against the mock
 * provider, and a webhook receiver that is a real Bun.serve on 127.0.0.1 (port 0). The receiver
 * gets JSON when a turn ends done, when `lazy stop` leaves the task waiting and when a turn
 * fails; a receiver answering 500 is tried 3 times (1 s, then 2 s apart) and the daemon log
 * says so naming only the URL's origin, while the turn ends done as if nothing happened; an
 * edit of lazy.toml counts from the next notification. The desktop channel runs a stand-in
 * notify-send put on the daemon's PATH, which records its argv. Needs a real Docker engine.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { TEST_IMAGES } from "../helpers/env";
import { containerProject, launched, settled } from "../helpers/fixtures";
import { cleanupAll, never, type Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const KEY = `sk-ant-api03-NOTIFYTURNS-${"n".repeat(68)}AA`;
const SECRET = "hook-secret-5d41402abc4b2a76";
const QSECRET = "qs-7f3c9e";

type Hit = { at: number; path: string; headers: Record<string, string>; body: any };
interface Receiver {
  hits: Hit[];
  /** The status it answers every POST with. */
  answer: number;
  url: string;
  origin: string;
  server: ReturnType<typeof Bun.serve>;
}
function receiver(): Receiver {
  const hits: Hit[] = [];
  const r: Partial<Receiver> = { hits, answer: 200 };
  r.server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req): Promise<Response> {
      const u = new URL(req.url);
      hits.push({
        at: Date.now(),
        path: u.pathname + u.search,
        headers: Object.fromEntries(req.headers),
        body: JSON.parse(await req.text()),
      });
      return new Response(null, { status: r.answer });
    },
  });
  r.origin = `http://127.0.0.1:${r.server.port}`;
  r.url = `${r.origin}/hooks/${SECRET}?token=${QSECRET}`;
  return r as Receiver;
}

let anthropic: Mock.MockProvider;
let hook: Receiver;
let hook2: Receiver;
let p: Project;
let bin: string;
const shown = () => join(bin, "shown");
const toml = (webhook: string, desktop: boolean) =>
  [
    `[container]`,
    `base = "${TEST_IMAGES.node}"`,
    ``,
    `[proxy.upstreams]`,
    `anthropic = "${anthropic.url}"`,
    ``,
    `[notify]`,
    `webhook = "${webhook}"`,
    `desktop = ${desktop}`,
    ``,
  ].join("\n");

/** Each notification the stand-in notify-send showed: its argv. */
const desktopShown = (): string[][] =>
  existsSync(shown())
    ? readFileSync(shown(), "utf8")
        .split("\x1e")
        .filter(Boolean)
        .map((rec) => rec.split("\0").slice(0, -1))
    : [];

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  hook = receiver();
  hook2 = receiver();
  bin = realpathSync(mkdtempSync(join(tmpdir(), "lazy-notify-bin-")));
  writeFileSync(
    join(bin, "notify-send"),
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\0' "$a"; done >> '${shown()}'\nprintf '\\036' >> '${shown()}'\n`,
  );
  chmodSync(join(bin, "notify-send"), 0o755);
  // The daemon inherits the CLI's environment: the stand-in is the notify-send it finds.
  p = await containerProject(anthropic, KEY, { toml: toml(hook.url, true), env: { PATH: `${bin}${delimiter}${process.env.PATH}` } });
}, 120_000);

afterAll(async () => {
  await cleanupAll(anthropic);
  hook?.server.stop(true);
  hook2?.server.stop(true);
  if (bin) rmSync(bin, { recursive: true, force: true });
});

/** The task once its turn has ended. */
const waitStatus = async (ref: string, timeoutMs = 600_000): Promise<any> => (await settled(p, ref, timeoutMs)).task;
const events = (r: Receiver) => r.hits.map((h) => h.body.event);

describe("notifications from real turns", () => {
  test("a turn ending done: the webhook gets the task, status and the agent's summary as JSON; the desktop shows it", async () => {
    anthropic.answer({ text: "All tests pass now." });
    const launchedAt = Date.now();
    await launched(p, "notify-me", "Fix the failing tests");
    const t = await waitStatus("notify-me");
    expect(t.status).toBe("done");
    await until(() => hook.hits.length >= 1, 30_000, "the webhook to receive the done notification");
    const [hit] = hook.hits;
    // Only the moves a human cares about are sent: not running.
    expect(events(hook)).toEqual(["done"]);
    expect(hit!.path).toBe(`/hooks/${SECRET}?token=${QSECRET}`);
    expect(hit!.headers["content-type"]).toBe("application/json");
    expect(hit!.headers["user-agent"]).toBe(`lazy/${pkg.version}`);
    const body = hit!.body;
    expect(body.event).toBe("done");
    expect(body.status).toBe("done");
    expect(body.task).toEqual({ id: t.id, code: "notify-me", title: "Fix the failing tests", profile: "claude" });
    expect(body.message).toContain("All tests pass now.");
    expect(body.reason).toBeUndefined();
    // When it happened: after this test launched the task, before the receiver heard of it.
    expect(Date.parse(body.at)).toBeGreaterThanOrEqual(launchedAt - 1000);
    expect(Date.parse(body.at)).toBeLessThanOrEqual(hit!.at);

    await until(() => desktopShown().length >= 1, 10_000, "the desktop notification");
    const [argv] = desktopShown();
    expect(argv!.slice(0, 3)).toEqual(["--app-name=lazy", "--", "lazy: notify-me done"]);
    expect(argv![3]).toContain("All tests pass now.");
  }, 900_000);

  test("lazy stop leaves the task waiting: the webhook gets waiting with the reason", async () => {
    anthropic.reset();
    anthropic.behavior = { kind: "hang" };
    const before = hook.hits.length;
    await p.ok(["send", "notify-me", "now the docs"]);
    await anthropic.waitFor(1, 120_000);
    await p.ok(["stop", "notify-me"]);
    expect((await waitStatus("notify-me", 60_000)).status).toBe("waiting");
    await until(() => hook.hits.length > before, 30_000, "the webhook to receive the waiting notification");
    const body = hook.hits.at(-1)!.body;
    expect(body.event).toBe("waiting");
    expect(body.status).toBe("waiting");
    expect(body.task.code).toBe("notify-me");
    expect(body.reason).toBe("stopped by the user (lazy stop)");
    await until(() => desktopShown().length >= 2, 10_000, "the desktop notification");
    expect(desktopShown().at(-1)!.slice(2, 4)).toEqual(["lazy: notify-me waiting", "stopped by the user (lazy stop)\nAll tests pass now."]);
    anthropic.reset();
  }, 300_000);

  test("a turn that fails: the webhook gets failed with the reason", async () => {
    anthropic.reset();
    anthropic.behavior = { kind: "status", status: 400 };
    const before = hook.hits.length;
    await p.ok(["send", "notify-me", "try again"]);
    expect((await waitStatus("notify-me", 300_000)).status).toBe("failed");
    await until(() => hook.hits.length > before, 30_000, "the webhook to receive the failed notification");
    const body = hook.hits.at(-1)!.body;
    expect(body.event).toBe("failed");
    expect(body.status).toBe("failed");
    // Why, in lazy's words; what the agent last said, in its own.
    expect(body.reason).toMatch(/^the agent exited with code [1-9]/);
    expect(body.message).toContain("400");
    anthropic.reset();
  }, 300_000);

  test("a webhook answering 500 is tried 3 times, backing off, and logged by origin only; the turn ends done regardless", async () => {
    anthropic.answer({ text: "Second pass done." });
    hook.answer = 500;
    const before = hook.hits.length;
    await p.ok(["send", "notify-me", "once more"]);
    const t = await waitStatus("notify-me");
    const doneAt = Date.now();
    expect(t.status).toBe("done");
    expect((await p.ok(["logs", "notify-me"])).stdout).toContain("Second pass done.");
    const line = `webhook ${hook.origin} failed 3 times (last: HTTP 500); the done of notify-me notification was dropped.`;
    await until(async () => (await p.ok(["daemon", "logs"])).stdout.includes(line), 60_000, "the daemon log to report the failed webhook");
    const tries = hook.hits.slice(before);
    expect(tries.map((h) => h.body.event)).toEqual(["done", "done", "done"]);
    // The turn did not wait for the webhook: the task was done before its last try came.
    expect(doneAt).toBeLessThan(tries[2]!.at);
    const gaps = tries.slice(1).map((h, i) => h.at - tries[i]!.at);
    expect(gaps[0]!).toBeGreaterThanOrEqual(900);
    expect(gaps[1]!).toBeGreaterThanOrEqual(1900);
    await never(() => hook.hits.length - before > 3, 1500, "a fourth try");
    expect(hook.hits.length - before).toBe(3);
    // The webhook's secret path and query are in no log line.
    const log = p.log();
    expect(log).not.toContain(SECRET);
    expect(log).not.toContain(QSECRET);
    hook.answer = 200;
  }, 600_000);

  test("an edit of [notify] counts from the next notification", async () => {
    const loadedAt = (await p.json(["daemon", "status"])).config.loadedAt;
    p.writeToml(toml(hook2.url, false));
    await until(async () => (await p.json(["daemon", "status"])).config.loadedAt !== loadedAt, 10_000, "the daemon to reload lazy.toml");
    const [firstHits, desktopBefore] = [hook.hits.length, desktopShown().length];
    anthropic.answer({ text: "Third pass done." });
    await p.ok(["send", "notify-me", "and again"]);
    expect((await waitStatus("notify-me")).status).toBe("done");
    await until(() => hook2.hits.length >= 1, 30_000, "the new webhook to receive the done notification");
    expect(hook2.hits[0]!.body.message).toContain("Third pass done.");
    await never(() => hook.hits.length > firstHits || desktopShown().length > desktopBefore, 500, "a notification by the old [notify]");
    expect(hook.hits.length).toBe(firstHits);
    expect(desktopShown().length).toBe(desktopBefore);
  }, 600_000);
});

describe("lazy doctor and the desktop channel", () => {
  test("desktop = true with neither notify-send nor osascript on PATH is a warning naming both; with one it is ok", async () => {
    p.writeToml(toml(hook.url, true));
    const path = (process.env.PATH ?? "")
      .split(delimiter)
      .filter((d) => d && !existsSync(join(d, "notify-send")) && !existsSync(join(d, "osascript")))
      .join(delimiter);
    const without = await p.run(["doctor", "--json"], { env: { PATH: path } });
    const findings = JSON.parse(without.stdout).findings.filter((f: any) => f.check === "notify");
    expect(findings).toEqual([
      {
        check: "notify",
        ok: false,
        blocking: false,
        summary: "desktop = true but neither notify-send nor osascript is on PATH",
        remedy: "install notify-send (Debian/Ubuntu: apt install libnotify-bin), or set desktop = false in [notify]",
      },
    ]);
    const text = await p.run(["doctor"], { env: { PATH: path } });
    expect(text.stdout).toContain("warn  notify   desktop = true but neither notify-send nor osascript is on PATH");
    const withTool = JSON.parse((await p.run(["doctor", "--json"])).stdout).findings.filter((f: any) => f.check === "notify");
    expect(withTool).toEqual([
      { check: "notify", ok: true, blocking: false, summary: `desktop notifications through ${join(bin, "notify-send")}` },
    ]);
  }, 120_000);
});
