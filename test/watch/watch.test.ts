/**
 * lazy watch: one live stream of every task's events and the proxy's traffic, with the docs'
 * task filter rules, refusals flagged with their cause, and the proxy's absence said first.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { anthropicHost, watching } from "../helpers/fixtures";
import { cleanupAll, never, Project, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-WATCH-" + "w".repeat(76) + "AA";
const BIN = join(import.meta.dir, "..", "..", "dist", "lazy");
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicHost(KEY));
  await p.ok(["task", "add", "fix the login", "--code", "fix-login"]);
  await p.ok(["task", "add", "fix the login again", "--code", "fix-login-2"]);
});

afterAll(() => cleanupAll(anthropic));

/** A running `lazy watch ARGS`, its stdout lines collected as they come. */
const watcher = (args: string[]) => watching(p, args);

async function call(placeholder: string, path = "/v1/messages") {
  const res = await fetch(`${p.runtimeProxyUrl()}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": placeholder },
    body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }),
  });
  await res.arrayBuffer();
  return res.status;
}

describe("lazy watch", () => {
  test("--task fix-login shows only that task's net> lines, each as its request is answered", async () => {
    const one = await p.grant({ role: "agent", task: "fix-login" });
    const two = await p.grant({ role: "agent", task: "fix-login-2" });
    const only = watcher(["--task", "fix-login", "--json"]);
    const all = watcher([]);
    try {
      // The stream is open once the hello line arrives (JSON) and the daemon answered (text).
      await until(() => only.lines.length > 0, 10_000, "the watch to open");
      expect(JSON.parse(only.lines[0]!)).toMatchObject({ type: "hello", proxy: null });
      await Bun.sleep(300);
      expect(await call(one.placeholder)).toBe(200);
      const net = await until(() => only.lines.map((l) => JSON.parse(l)).find((x) => x.type === "net"), 5_000, "a net> line");
      expect(net).toMatchObject({ task: { code: "fix-login" }, role: "agent", method: "POST", path: "/v1/messages", status: 200 });
      expect(net.input).toBeGreaterThan(0);
      expect(await call(two.placeholder)).toBe(200);
      // The unfiltered watch sees both, as text lines.
      await until(() => all.lines.filter((l) => l.includes("net>")).length >= 2, 5_000, "both net> lines");
      const text = all.lines.filter((l) => l.includes("net>"));
      expect(text[0]).toMatch(/^\d\d:\d\d:\d\d {2}fix-login {2}net> agent claude POST \/v1\/messages 200 \d+ms {2}\d+ in\/\d+ out$/);
      expect(text[1]).toContain("fix-login-2  net>");
      // fix-login never shows fix-login-2.
      await never(() => only.lines.some((l) => l.includes('"fix-login-2"')), 500, "fix-login-2 in the fix-login watch");
      const nets = only.lines.map((l) => JSON.parse(l)).filter((x) => x.type === "net");
      expect(nets.map((x) => x.task.code)).toEqual(["fix-login"]);
    } finally {
      only.stop();
      all.stop();
    }
  }, 60_000);

  test("a filter that names no task is refused with exit 2; an unknown task is an error", async () => {
    for (const args of [["--task", ""], ["--task="]]) {
      const r = await p.run(["watch", ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("An empty task filter names no task");
    }
    const r = await p.run(["watch", "--task", "fix-log"]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('No task "fix-log"');
    // The same rules in lazy stats audit.
    expect((await p.run(["stats", "audit", "--task", ""])).code).toBe(2);
    const audit = await p.json(["stats", "audit", "--task", "fix-login"]);
    expect(audit.rows.every((r: any) => r.taskRef === "fix-login")).toBe(true);
  }, 30_000);

  test("a revoked placeholder's request appears flagged: the grant is gone", async () => {
    await p.ok(["task", "add", "short lived", "--code", "gone"]);
    const g = await p.grant({ role: "agent", task: "gone" });
    await p.ok(["close", "gone"]);
    const w = watcher([]);
    try {
      await Bun.sleep(1_000); // the text watch prints nothing until something happens
      expect(await call(g.placeholder)).toBe(401);
      const line = await until(() => w.lines.find((l) => l.includes("net>") && l.includes("401")), 5_000, "the refusal's line");
      expect(line).toContain("REFUSED: grant is gone");
    } finally {
      w.stop();
    }
  }, 30_000);

  test("a path the surface does not forward is flagged with its cause; --since replays the backlog", async () => {
    const g = await p.grant({ role: "agent", task: "fix-login" });
    expect(await call(g.placeholder, "/v1/files")).toBe(403);
    const r = Bun.spawn([BIN, "watch", "--since", "1h", "--json"], { cwd: p.root, env: p.fullEnv(), stdout: "pipe" });
    const lines: any[] = [];
    // The backlog is written at once; read what came in a short while, then stop.
    setTimeout(() => r.kill(), 2_000);
    const out = await new Response(r.stdout).text();
    for (const l of out.split("\n").filter(Boolean)) lines.push(JSON.parse(l));
    const refused = lines.find((x) => x.type === "net" && x.status === 403);
    expect(refused.refused).toStartWith("path not forwarded:");
    // The backlog holds the task events too (created, in order of time).
    expect(lines.some((x) => x.type === "event" && x.task.code === "fix-login" && x.kind === "created")).toBe(true);
  }, 30_000);

  test("with the proxy unavailable, watch still follows task events and says so on its first line", async () => {
    // An address this machine does not have: the proxy cannot listen, the daemon runs on.
    const q = new Project({ toml: `[proxy]\nbind = "192.0.2.1"\n` });
    await q.ok(["task", "add", "still watched", "--code", "still"]);
    const proc = Bun.spawn([BIN, "watch"], { cwd: q.root, env: q.fullEnv(), stdout: "pipe", stderr: "pipe" });
    setTimeout(() => proc.kill(), 2_500);
    await Bun.sleep(800);
    await q.ok(["close", "still"]);
    const out = (await new Response(proc.stdout).text()).split("\n").filter(Boolean);
    expect(out[0]).toMatch(/^-- watching; the proxy is unavailable: .*no net> lines until it is back$/);
    expect(out.some((l) => /still {2}-- queued → closed/.test(l))).toBe(true);
  }, 30_000);
});
