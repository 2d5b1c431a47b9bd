/**
 * After a full proxied turn (real Claude Code through lazy chat), the secret's bytes are in the
 * chosen backend and nowhere else: not in the daemon log, the state folder's other files, the
 * SQLite files, the project, or anything any lazy command printed.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, Project, storedReadings, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const TOOLS = `${process.env.LAZY_TEST_TOOLS ?? "/opt/lazy-test-tools"}/node_modules/.bin`;
let mock: Mock.MockProvider | undefined;

afterAll(async () => {
  await cleanupAll();
  await mock?.close();
});

function files(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    const st = statSync(p);
    if (st.isDirectory()) out.push(...files(p));
    else if (st.isFile()) out.push(p);
  }
  return out;
}

describe("where a secret lives", () => {
  test("after a full proxied turn: only in the chosen backend", async () => {
    mock = await Mock.anthropic();
    mock.rateLimitHeaders = { "anthropic-ratelimit-unified-5h-utilization": "0.2" };
    const KEY = `sk-ant-api03-SCAN${crypto.randomUUID().replaceAll("-", "")}${"s".repeat(44)}AA`;
    const p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${mock.url}"\n` });
    const outputs: string[] = [];
    const keep = (r: { stdout: string; stderr: string }) => outputs.push(r.stdout, r.stderr);
    keep(await p.setCredential("anthropic", KEY));
    const chat = await p.run(["chat", "--profile", "claude", "--", "-p", "say hi", "--output-format", "json"], {
      env: { PATH: `${TOOLS}:${process.env.PATH}`, HOME: p.home },
    });
    keep(chat);
    expect(chat.code, chat.stderr).toBe(0);
    expect(mock.received.some((r) => r.method === "POST" && r.headers["x-api-key"] === KEY)).toBe(true);
    for (const args of [
      ["auth", "list"],
      ["auth", "list", "--json"],
      ["stats", "audit"],
      ["stats", "audit", "--json"],
      ["stats", "limits", "--json"],
      ["daemon", "status", "--json"],
      ["doctor"],
      ["daemon", "logs"],
      ["task", "list"],
    ])
      keep(await p.run(args));
    // The audit and readings are written off the request path: wait until both are in the files.
    await until(
      async () => (await p.json(["stats", "audit"])).rows.length >= mock!.received.length && storedReadings(p).includes("0.2"),
      10_000,
      "every request's audit row and the reading in the store",
    );

    const hits = (text: string | Buffer) => (typeof text === "string" ? text.includes(KEY) : text.includes(KEY));
    const backend = join(p.home, "credentials", "credentials.json");
    expect(hits(readFileSync(backend))).toBe(true); // the control: the scan can find it
    const stateFiles = files(p.stateDir);
    expect(stateFiles.some((f) => f.endsWith("store.db"))).toBe(true);
    expect(stateFiles.some((f) => f.endsWith("daemon.log"))).toBe(true);
    const leaks = [...files(p.home).filter((f) => f !== backend), ...files(p.root)].filter((f) => hits(readFileSync(f)));
    expect(leaks).toEqual([]);
    expect(outputs.filter(hits)).toEqual([]);
    // Claude Code's own config folder (lazy's, under the state folder) holds only the placeholder.
    expect(stateFiles.filter((f) => f.includes("/harness/")).length).toBeGreaterThan(0);
  }, 180_000);
});
