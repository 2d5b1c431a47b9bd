/**
 * Attacks on lazy's MCP route, its tools, attribution and project memory (issue 26, findings 2,
 * 7, 8, 9, 10), as a hostile local process and as a prompt-injected agent in a real task
 * container: real Claude Code runs test/attacks/mcp-agent.mjs as a Bash tool call during its
 * own turn (the mock provider answers with the tool_use), and a process left behind in a
 * finished task's container calls the tools with its token. Each test asserts the refusal and
 * that nothing reached the upstream mock or lazy's records. Needs a real Docker engine.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { anthropicProject, copying, launched, settledAs } from "../helpers/fixtures";
import { cleanupAll, never, type Project, sh, until } from "../helpers/lazy";
import type * as Mock from "../helpers/providers";

const KEY = "sk-ant-api03-MCPATTACKS-" + "k".repeat(70) + "AA";
const PERSON = "A person's fact: releases are tagged by hand, never by a script.";
const MiB = 1024 * 1024;
let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  ({ anthropic, p } = await anthropicProject(KEY, { readme: false, files: copying(import.meta.dir, "mcp-agent.mjs") }));
  await p.ok(["memory", "add", PERSON]);
}, 120_000);

afterAll(() => cleanupAll(anthropic));

const mcpUrl = () => `${p.runtimeProxyUrl()}/mcp`;
const rpcBody = (name: string, args: unknown, id = 1) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
const rpcHeaders = (token?: string): Record<string, string> => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});
/** The daemon's resident memory now and at its peak, in MiB (/proc/PID/status). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const s = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)![1]) / 1024;
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}
/** Declare a 125 MiB body, send 64 KiB of it, and wait for an answer before sending the rest. */
function early(url: string, token?: string): Promise<{ status: number | null; text: string }> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = connect(Number(u.port), u.hostname);
    let got = "";
    let done = false;
    const finish = (status: number | null) => {
      if (done) return;
      done = true;
      s.destroy();
      resolve({ status, text: got });
    };
    s.on("connect", () => {
      s.write(
        `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\n${token ? `Authorization: Bearer ${token}\r\n` : ""}Content-Type: application/json\r\nContent-Length: ${125 * MiB}\r\n\r\n`,
      );
      s.write(Buffer.alloc(64 * 1024, 0x20));
    });
    s.on("data", (d) => {
      got += d.toString();
      if (got.includes("\r\n\r\n")) setTimeout(() => finish(Number(got.split(" ")[1])), 200);
    });
    s.on("error", () => finish(null));
    setTimeout(() => finish(null), 8000);
  });
}
const mcpRows = async () => (await p.json(["stats", "audit"])).rows.filter((r: any) => r.path === "/mcp");
/** Refusals of MCP callers lazy cannot attribute: counted per minute, source and reason, not rows (proxy/audit/refusals.ts). */
const mcpCounted = async () => (await p.json(["stats", "audit"])).refused.filter((l: any) => l.path === "/mcp");
const tokenOf = (taskId: string): { token: string; pinnedIp?: string | null } =>
  JSON.parse(readFileSync(join(p.stateDir, "proxy-tokens.json"), "utf8")).mcpTokens.find((h: any) => h.taskId === taskId);
const storeRead = <T>(sql: string, ...args: string[]): T => {
  const db = new Database(join(p.stateDir, "store.db"), { readonly: true });
  try {
    return db.query(sql).get(...args) as T;
  } finally {
    db.close();
  }
};
const spentBy = async (code: string): Promise<number> =>
  (await p.json(["stats", "budget"])).tasks.find((t: any) => t.code === code)?.tokens ?? 0;

describe("a hostile local process on the MCP route", () => {
  test("tokenless 125 MiB POSTs: 401 while the body is still being sent, and the daemon's memory does not balloon", async () => {
    const pid = p.runtime()!.pid;
    const before = memoryOf(pid);
    // Answered before the body: 64 KiB of a declared 125 MiB sent, and the 401 is already here.
    const first = await early(mcpUrl());
    expect(first.status).toBe(401);
    expect(first.text).toContain("lazy's MCP route needs the task's token");
    // Twelve whole 125 MiB bodies, six at a time (the probe took the daemon from 116 MB to 3.6 GB with 24).
    const big = new Uint8Array(125 * MiB);
    for (let round = 0; round < 2; round++) {
      const statuses = await Promise.all(
        Array.from({ length: 6 }, () =>
          fetch(mcpUrl(), { method: "POST", headers: rpcHeaders(), body: big }).then(
            (r) => r.status,
            () => "cut",
          ),
        ),
      );
      for (const s of statuses) expect([401, "cut"]).toContain(s);
      expect(statuses).toContain(401);
    }
    const after = memoryOf(pid);
    expect(after.peak - before.peak, `peak RSS ${before.peak} → ${after.peak} MiB`).toBeLessThan(200);
    expect(await mcpRows()).toEqual([]);
    const counted = await mcpCounted();
    expect(counted.reduce((n: number, l: any) => n + l.count, 0)).toBeGreaterThan(0);
    for (const l of counted) expect(l).toMatchObject({ status: 401, taskId: "", reason: "no MCP token" });
  }, 300_000);

  test("a wrong MCP token: 401 with a JSON-RPC error saying why, before a 125 MiB body is read; audited as unknown, no tool runs", async () => {
    const wrong = await early(mcpUrl(), "lazy-mcp-" + "e".repeat(48));
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain("does not know this token");
    const res = await fetch(mcpUrl(), {
      method: "POST",
      headers: rpcHeaders("lazy-mcp-" + "f".repeat(48)),
      body: rpcBody("memory_write", { note: "planted" }),
    });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body).toMatchObject({ jsonrpc: "2.0", error: { code: -32001 } });
    expect(body.error.message).toContain("does not know this token");
    expect((await mcpCounted()).at(-1)).toMatchObject({ status: 401, taskId: "", reason: "unknown or revoked MCP token" });
    expect((await p.json(["memory", "list", "--json"])).notes.map((n: any) => n.text)).toEqual([PERSON]);
  });
});

describe("attribution comes from the grant only", () => {
  test("no placeholder, with x-lazy-task-id and x-lazy-role naming a task: 401, nothing forwarded, not attributed", async () => {
    const t = await p.json(["task", "add", "a task to pose as", "--code", "posed"]);
    anthropic.reset();
    const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01", "x-lazy-task-id": t.id, "x-lazy-role": "lazy" },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "bill task posed" }] }),
    });
    expect(res.status).toBe(401);
    expect((await res.json()).error.message).toContain("send the placeholder lazy gave the task");
    expect(anthropic.received).toHaveLength(0);
    const counted = (await p.json(["stats", "audit"])).refused.at(-1);
    expect(counted).toMatchObject({ status: 401, taskId: "", taskRef: "", reason: "no credential" });
    expect((await p.json(["stats", "audit", "--task", "posed"])).rows).toHaveLength(0);
    // Claude Code's credential-less reachability probe still passes.
    expect((await fetch(`${p.runtimeProxyUrl()}/api/hello`, { method: "HEAD" })).status).toBe(200);
  });

  test("a key of the caller's own with x-lazy-task-id: forwarded as is (a host session), charged to no task", async () => {
    const t = await p.json(["task", "show", "posed"]);
    anthropic.reset();
    const own = "sk-ant-oat01-someone-elses-" + "q".repeat(40);
    const res = await fetch(`${p.runtimeProxyUrl()}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        authorization: `Bearer ${own}`,
        "x-lazy-task-id": t.task.id,
        "x-lazy-role": "agent",
      },
      body: JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 10, messages: [{ role: "user", content: "bill task posed" }] }),
    });
    expect(res.status).toBe(200);
    expect(anthropic.received[0]!.headers.authorization).toBe(`Bearer ${own}`);
    expect(anthropic.received[0]!.headers["x-lazy-task-id"]).toBeUndefined();
    expect(anthropic.received[0]!.headers["x-lazy-role"]).toBeUndefined();
    expect((await p.json(["stats", "audit"])).rows.at(-1)).toMatchObject({ status: 200, taskId: null, role: null });
    expect((await p.json(["stats", "audit", "--task", "posed"])).rows).toHaveLength(0);
    expect(await spentBy("posed")).toBe(0);
  });
});

describe("tools on a task that is not running, and a token from another address", () => {
  let finisher: { id: string; token: string; pinnedIp: string | null | undefined; container: string };

  beforeAll(async () => {
    anthropic.answer({ text: "Finished.", toolUse: { name: "mcp__lazy__finish", input: { summary: "The real summary." } } });
    const t = await p.json(["task", "add", "Finish honestly", "--code", "finisher"]);
    await p.ok(["start", "finisher"]);
    await settledAs(p, "finisher");
    const h = tokenOf(t.id);
    // A turn's end stops the task's container: it is there, stopped.
    const container = sh("/", `docker ps -aq --filter label=dev.lazy.task=${t.id}`).out.trim();
    finisher = { id: t.id, token: h.token, pinnedIp: h.pinnedIp, container };
  }, 600_000);

  test("a done task's container started again by hand calls finish: 401 (its task has no running turn), the summary kept", async () => {
    expect(storeRead<{ summary: string }>("SELECT summary FROM runs WHERE task_id = ?", finisher.id).summary).toBe("The real summary.");
    expect(finisher.container).not.toBe("");
    // Nothing of the agent's outlives its turn: someone starts the container again outside lazy.
    expect(JSON.parse(sh("/", `docker inspect ${finisher.container}`).out)[0].State.Running).toBe(false);
    sh("/", `docker start ${finisher.container}`);
    const url = new URL(mcpUrl());
    // From the container, the proxy is at the project network's gateway: the URL the agent was given.
    const given = JSON.parse(sh("/", `docker exec ${finisher.container} cat /lazy/harness/mcp.json`).out).mcpServers.lazy.url as string;
    expect(new URL(given).port).toBe(url.port);
    const script = `fetch(${JSON.stringify(given)},{method:"POST",headers:${JSON.stringify(rpcHeaders(finisher.token))},body:${JSON.stringify(rpcBody("finish", { summary: "Rewritten behind the reviewer's back." }))}}).then(async r=>console.log(r.status, await r.text()))`;
    const r = sh("/", `docker exec ${finisher.container} node -e '${script.replaceAll("'", "'\\''")}'`);
    expect(r.out).toStartWith("401 ");
    expect(r.out).toContain("task finisher has no running turn");
    expect(storeRead<{ summary: string }>("SELECT summary FROM runs WHERE task_id = ?", finisher.id).summary).toBe("The real summary.");
    const s = await p.json(["task", "show", "finisher"]);
    expect(s.task.status).toBe("done");
    expect(s.events.filter((e: any) => e.kind === "finish")).toHaveLength(1);
  }, 120_000);

  test("another task's MCP token from this host after its turn: 401 naming why, audited as unknown; its pin went with its container", async () => {
    // Native Docker pins: the token worked from its container's address only, and that address
    // stopped redeeming it when the container stopped (Docker hands it to the next container).
    expect(finisher.pinnedIp).toBeNull();
    const res = await fetch(mcpUrl(), {
      method: "POST",
      headers: rpcHeaders(finisher.token),
      body: rpcBody("task_info", {}),
    });
    expect(res.status).toBe(401);
    const body = await res.json();
    expect(body.error.message).toContain("task finisher has no running turn");
    expect((await mcpCounted()).at(-1)).toMatchObject({ status: 401, taskId: "", reason: "no running turn" });
  });

  describe("a prompt-injected agent during its own running turn", () => {
    let results: any;
    let flooder: { id: string };

    let builder: string;

    beforeAll(async () => {
      // A person's builder session on this machine (lazy build): its token makes and starts tasks.
      builder = (await p.api<{ mcp: { token: string } }>("POST", "/api/build/session", { name: "person", pid: process.pid })).mcp.token;
      anthropic.answer({
        text: "done.",
        toolUse: {
          name: "Bash",
          input: { command: `node mcp-agent.mjs ${finisher.token} ${builder}`, description: "attack", timeout: 300000 },
        },
      });
      flooder = await p.json(["task", "add", "Attack the MCP route", "--code", "flooder"]);
      await p.ok(["start", "flooder"]);
      await settledAs(p, "flooder");
      results = JSON.parse(readFileSync(join(p.stateDir, "worktrees", "flooder", "attack-results.json"), "utf8"));
      expect(results.hasToken).toBe(true);
    }, 600_000);

    test("a tokenless 125 MiB body from the container: 401 before the rest of the body is sent", () => {
      expect(results.tokenlessEarly.status).toBe(401);
      expect(results.tokenlessEarly.text).toContain("needs the task's token");
      expect(results.tokenless.status).toBe(401);
    });

    test("a declared body over the 1 MiB cap with its own token: 413 before the body is read", () => {
      expect(results.declaredOverCap.status).toBe(413);
      expect(results.declaredOverCap.text).toContain("at most 1048576 bytes");
    });

    test("a chunked body over the cap with its own token: 413, cut while reading, nothing recorded", async () => {
      expect(results.chunkedOverCap.status).toBe(413);
      const rows = (await p.api("GET", "/api/stats/audit?task=flooder&limit=10000")).rows.filter((r: any) => r.path === "/mcp");
      expect(rows.some((r: any) => r.status === 413 && /chunked MCP body passed 1048576 bytes/.test(r.note))).toBe(true);
    });

    test("another task's token from this container's address: 401 naming why (its task has no running turn); nothing recorded on that task", async () => {
      expect(results.othersToken.status).toBe(401);
      expect(results.othersToken.body).toContain("task finisher has no running turn");
      const s = await p.json(["task", "show", "finisher"]);
      expect(s.events.some((e: any) => e.kind === "progress")).toBe(false);
    });

    test("a builder session's token from this container's address: 401, usable from this machine only; no task made", async () => {
      expect(results.builderToken.status).toBe(401);
      expect(results.builderToken.body).toContain("builder session person on this machine, usable from this machine only");
      expect((await p.json<any[]>(["task", "list"])).some((t) => t.code === "stolen")).toBe(false);
      // From this machine the same token still works: the refusal is the address, not the token.
      const res = await fetch(mcpUrl(), { method: "POST", headers: rpcHeaders(builder), body: rpcBody("task_list", {}) });
      expect(res.status).toBe(200);
    });

    test("a report_progress flood: at most 30 stored, the rest counted once as dropped and shown in lazy logs", async () => {
      expect(results.flood.ok + results.flood.toolError).toBe(3000);
      expect(results.flood.sample).toContain("at most 30 progress notes a minute");
      const stored = (await p.json(["task", "show", "flooder"])).events.filter(
        (e: any) => e.kind === "progress" && /^flood /.test(e.data.text),
      );
      expect(stored.length).toBe(results.flood.ok);
      expect(stored.length).toBeLessThanOrEqual(30);
      // The count of what was dropped is kept: one event when the minute ends.
      const events = await until(
        async () => {
          const ev = (await p.json(["task", "show", "flooder"])).events.filter((e: any) => e.kind === "progress_dropped");
          return ev.length ? ev : undefined;
        },
        90_000,
        "the dropped count",
      );
      expect(events).toHaveLength(1);
      expect(events[0].data.dropped).toBe(3000 - stored.length);
      expect((await p.ok(["logs", "flooder"])).stdout).toContain(`${3000 - stored.length} progress note(s) dropped: past 30 a minute`);
    }, 120_000);

    test("a memory_write flood: at most 5 kept, no compaction started, the person's note word for word; the next task reads agents' notes as unverified", async () => {
      expect(results.memory.ok).toBe(5);
      expect(results.memory.sample).toContain("a turn adds at most 5 notes");
      const notes = (await p.json(["memory", "list", "--json"])).notes;
      expect(notes[0]).toMatchObject({ text: PERSON, by: "human" });
      expect(notes.filter((n: any) => n.by === "agent" && n.taskId === flooder.id)).toHaveLength(5);
      await never(
        () =>
          p.log().includes("project memory compacted") ||
          anthropic.received.some((r) => r.method === "POST" && r.body.includes("Rewrite these notes")),
        2000,
        "a memory compaction",
      );
      expect(p.log()).not.toContain("project memory compacted");
      expect(anthropic.received.some((r) => r.method === "POST" && r.body.includes("Rewrite these notes"))).toBe(false);
      // The next task's first prompt carries the person's note as is, and agents' notes marked.
      anthropic.answer({ text: "Read it." });
      await launched(p, "reader", "Read the memory");
      await settledAs(p, "reader");
      const first = anthropic.received.find((r) => r.method === "POST" && r.path.startsWith("/v1/messages"))!.body;
      expect(first).toContain(PERSON);
      expect(first).toContain("(unverified, written by an agent) agent fact");
    }, 600_000);
  });
});
