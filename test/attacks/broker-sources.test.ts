/**
 * What a task can make the daemon do on the host through a brokered service's secret source,
 * and what hostile answers can do to it. A task controls how many brokered requests it sends:
 * a flood while the host command fails (gh logged out) must not fork-bomb the host (one run per
 * 5 s back-off, one run for concurrent asks); a run that hangs is one process, not one per
 * request. The GitHub App's API answer is the network's: a redirect to another host must never
 * carry the App's signed token there, and an endless answer is bounded, not read whole. Before
 * issue 36 none of this existed (the modules are new), so each test fails on the old code by
 * construction; the bounds are what they pin.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RETRY_MS, SourceError, Sources } from "../../src/broker/sources";
import { encodePem } from "../../src/credentials";
import { keptLog, tempDir } from "../broker/helpers";

const tmp = tempDir();
const servers: { stop(force?: boolean): void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop(true);
  tmp.cleanup();
});
const runs = (file: string) => (existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0);
const failed = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe("a task's flood against a command source", () => {
  test("a failing command runs once per back-off however many requests ask, concurrently or one after another", async () => {
    const file = join(tmp.dir, "fail.runs");
    const path = tmp.script("fail", `echo run >> "${file}"\necho "not logged in" >&2\nexit 4`);
    let now = Date.now();
    const sources = new Sources({ credential: async () => null, log: keptLog(), cwd: tmp.dir, now: () => now });
    const spec = { kind: "command" as const, argv: [path], ttlMs: 3_600_000 };
    const task = { id: "t1", repos: [] };
    const burst = await Promise.all(Array.from({ length: 300 }, () => failed(sources.get("github", spec, task))));
    for (const e of burst) expect(e).toBeInstanceOf(SourceError);
    for (let i = 0; i < 300; i++) expect(await failed(sources.get("github", spec, task))).toBeInstanceOf(SourceError);
    expect(runs(file)).toBe(1);
    now += RETRY_MS - 1;
    await failed(sources.get("github", spec, task));
    expect(runs(file)).toBe(1);
    now += 2;
    await Promise.all(Array.from({ length: 50 }, () => failed(sources.get("github", spec, task))));
    expect(runs(file)).toBe(2);
  });

  test("a hanging command is one process for every request that waits on it, killed at the bound", async () => {
    const file = join(tmp.dir, "hang.runs");
    const path = tmp.script("hang", `echo run >> "${file}"\nexec sleep 300`);
    const sources = new Sources({ credential: async () => null, log: keptLog(), cwd: tmp.dir, commandTimeoutMs: 800 });
    const all = await Promise.all(
      Array.from({ length: 100 }, () =>
        failed(sources.get("github", { kind: "command", argv: [path], ttlMs: 60_000 }, { id: "t1", repos: [] })),
      ),
    );
    expect(runs(file)).toBe(1);
    for (const e of all) expect((e as Error).message).toContain("did not finish within 0.8 s and was killed");
  });
});

describe("hostile answers to the GitHub App's calls", () => {
  const key = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "pem", type: "pkcs1" }).toString();
  const storedKey = (() => {
    const r = encodePem(key);
    if (!("stored" in r)) throw new Error(r.refused);
    return r.stored;
  })();
  const sourcesFor = () => new Sources({ credential: async () => storedKey, log: keptLog(), cwd: "/" });

  test("a redirect to another host is not followed: the App's JWT never reaches it", async () => {
    const elsewhere: string[] = [];
    const other = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        elsewhere.push(req.headers.get("authorization") ?? "(none)");
        return Response.json({ id: 1, token: "ghs_x", expires_at: new Date(Date.now() + 3_600_000).toISOString() });
      },
    });
    servers.push(other);
    const api = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => Response.redirect(`http://127.0.0.1:${other.port}${new URL(req.url).pathname}`, 307),
    });
    servers.push(api);
    const e = await failed(
      sourcesFor().get(
        "github",
        { kind: "app", appId: "7", key: "k", permissions: {}, api: `http://127.0.0.1:${api.port}` },
        { id: "t1", repos: ["acme/widgets"] },
      ),
    );
    expect(e).toBeInstanceOf(SourceError);
    expect((e as Error).message).toContain(`answered 307 while finding its installation on acme/widgets`);
    expect(elsewhere).toEqual([]);
  });

  test("an endless answer is cut at the bound, not read whole", async () => {
    let sent = 0;
    const api = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            pull(c) {
              // 64 MiB at most, so a regression fails the test rather than hanging it.
              if (sent > 64 * 1024 * 1024) return c.close();
              sent += 65536;
              c.enqueue(new Uint8Array(65536).fill(32));
            },
          }),
          { status: 200, headers: { "content-type": "application/json" } },
        ),
    });
    servers.push(api);
    const e = await failed(
      sourcesFor().get(
        "github",
        { kind: "app", appId: "7", key: "k", permissions: {}, api: `http://127.0.0.1:${api.port}` },
        { id: "t1", repos: ["acme/widgets"] },
      ),
    );
    expect((e as Error).message).toContain("answered no installation id for acme/widgets");
    expect(sent).toBeLessThan(8 * 1024 * 1024);
  });
});
