/**
 * Issue 17, item 5: 20,000 connections from one address, each with a whole chunked request head
 * and then a byte every 10 s, from a process of its own (test/helpers/flood.ts). Each presents a
 * live placeholder (since issue 26 a request with no credential is refused before its body):
 * the proxy admits it and waits for its body. The daemon
 * must stay answerable (its API, the dashboard), cut the stalled requests, refuse what passes
 * the per-source cap at once, forward none of it, and log a few lines, not one per connection.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { cleanupAll, Project, until } from "../helpers/lazy";
import * as Mock from "../helpers/providers";

const FLOOD = resolve(import.meta.dir, "../helpers/flood.ts");
const CONNECTIONS = 20_000;
const SECONDS = 40;

let anthropic: Mock.MockProvider;
let p: Project;

beforeAll(async () => {
  anthropic = await Mock.anthropic();
  p = new Project({ toml: `[proxy.upstreams]\nanthropic = "${anthropic.url}"\n` });
  await p.setCredential("anthropic", "sk-ant-api03-REAL-" + "f".repeat(80) + "AA");
});

afterAll(async () => {
  await cleanupAll();
  await anthropic?.close();
});

const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, performance.now() - t0];
}

test("20,000 stalled connections: the API and dashboard answer, the stalls are cut, nothing is forwarded, a few log lines", async () => {
  const proxy = new URL(p.runtimeProxyUrl());
  const rt = p.runtime()!;
  const host = await p.grant({ role: "host", profile: "claude" });
  const logBefore = p.log().split("\n").length;
  anthropic.reset();

  // The flood's own open-file limit raised as far as this machine allows (the hard limit).
  const flood = Bun.spawn(
    ["sh", "-c", `ulimit -n $(ulimit -Hn); exec "${process.execPath}" "${FLOOD}" ${proxy.port} ${CONNECTIONS} ${SECONDS}`],
    { stdout: "pipe", stderr: "inherit", env: { ...process.env, FLOOD_KEY: host.placeholder } },
  );
  type Counts = {
    ms: number;
    opened: number;
    closed: number;
    answered: number;
    status429: number;
    errors: number;
    open: number;
    maxOpen: number;
  };
  const lines: Counts[] = [];
  const reading = (async () => {
    let buf = "";
    for await (const chunk of flood.stdout as unknown as AsyncIterable<Uint8Array>) {
      buf += new TextDecoder().decode(chunk);
      for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
        lines.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    }
  })();
  let maxFds = 0;
  const sampler = setInterval(() => (maxFds = Math.max(maxFds, fds(rt.pid))), 200);
  try {
    // Once the flood is in (every connection opened or refused), the daemon must still answer.
    // (Against a daemon without the caps the flood never gets them all open: it fills the
    // daemon's open-file table first. 15 s, then the daemon is asked regardless.)
    for (let i = 0; i < 150 && !((lines.at(-1)?.opened ?? 0) >= CONNECTIONS * 0.9); i++) await Bun.sleep(100);
    const [list, listMs] = await timed(() =>
      Promise.race([p.run(["task", "list"]), Bun.sleep(30_000).then(() => ({ code: -1, stdout: "", stderr: "no answer in 30 s" }))]),
    );
    const [status, statusMs] = await timed(() => p.api("GET", "/api/status"));
    const [dash, dashMs] = await timed(() =>
      fetch(`http://127.0.0.1:${rt.api.port}/`).then(async (r) => ({ status: r.status, text: await r.text() })),
    );
    const during = lines.at(-1)!;
    console.log(
      `during the flood (${JSON.stringify(during)}): lazy task list ${listMs.toFixed(0)} ms, GET /api/status ${statusMs.toFixed(0)} ms, dashboard ${dashMs.toFixed(0)} ms; daemon fds ${fds(rt.pid)} (max so far ${maxFds})`,
    );
    expect(list.code).toBe(0); // within the 30 s the race above gives it
    expect(status).toBeTruthy();
    expect(dash.status).toBe(200);

    // The stalled requests are cut by the idle timeout (10 s), though each trickles a byte.
    const [, cutMs] = await timed(() =>
      until(
        () => lines.at(-1)!.closed >= lines.at(-1)!.opened * 0.99 && lines.at(-1)!.opened > 0,
        25_000,
        "the stalled connections to be cut",
      ),
    );
    const cut = lines.at(-1)!;
    console.log(`stalled connections cut ${cutMs.toFixed(0)} ms after the flood was in: ${JSON.stringify(cut)}; daemon fds max ${maxFds}`);
    expect(cut.status429).toBeGreaterThan(0);
  } finally {
    clearInterval(sampler);
    flood.kill();
    await flood.exited;
    await reading.catch(() => {});
  }

  // Afterwards the proxy answers as before; nothing of the flood reached the upstream.
  const g = await p.grant({ role: "host", profile: "claude" });
  const res = await until(
    async () => {
      const r = await fetch(`${g.proxyUrl}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": g.placeholder, "content-type": "application/json" },
        body: JSON.stringify({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }),
      });
      return r.status === 200 ? r : undefined;
    },
    30_000,
    "the proxy to answer after the flood",
  );
  await res.text();
  expect(anthropic.received).toHaveLength(1);

  const added = p
    .log()
    .split("\n")
    .slice(logBefore - 1)
    .filter(Boolean);
  console.log(`daemon.log lines added during the flood: ${added.length}\n${added.join("\n")}`);
  expect(added.length).toBeLessThanOrEqual(12);
  expect(added.join("\n")).not.toContain("    at "); // no stack traces
}, 180_000);
