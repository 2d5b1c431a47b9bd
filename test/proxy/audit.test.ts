// The audit trail's writer thread (src/proxy/audit/): rows recorded on the
// proxy's thread are readable once settled; a writer that dies never leaves a reader hanging.
// The Recorder runs on the proxy's thread in the daemon; here it feeds the trail directly, and
// the trail's `pending` hook is what the daemon's is: hand over what the recorder holds.

import type { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Audit, Recorder, type Row } from "../../src/proxy/audit";
import { open } from "../../src/store";
import { auditRow } from "../helpers/audit-row";

const row = (i: number, taskId: string | null = null): Row =>
  auditRow({
    taskId,
    taskRef: taskId,
    role: "builder",
    durationMs: 1 + i,
    ttfbMs: 0.5,
    bytesOut: 20,
    usage: { input: 3, output: 2, cacheRead: 0, cacheWrite: 0 },
    lazyInMs: 0.04,
    lazyOutMs: 0.02,
  });

function trail(db: Database, log: never, maxRows = 10_000, maxRefusals = 10_000) {
  let audit: Audit | undefined;
  const recorder = new Recorder(
    (rows) => audit!.write(rows),
    (tally) => audit!.refused(tally),
  );
  audit = new Audit(
    db,
    () => ({ maxRows, maxAgeDays: 30, maxRefusals }),
    log,
    async () => recorder.flush(),
  );
  return { audit, recorder };
}

/** A store of its own for one test, closed and removed after it. */
async function inStore(fn: (db: Database, dir: string) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), "lazy-audit-"));
  const db = open(join(dir, "store.db"));
  try {
    await fn(db, dir);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function logger() {
  const lines: string[] = [];
  const push = (m: string) => void lines.push(m);
  return { lines, log: { debug: push, info: push, warn: push, error: push } as never };
}

test("rows recorded on this thread are in the store once settled, token totals with them; stop writes what is queued", async () => {
  await inStore(async (db) => {
    const { log } = logger();
    const { audit, recorder } = trail(db, log);
    for (let i = 0; i < 1200; i++) recorder.record(row(i, i % 2 ? "t1" : null));
    expect(await audit.count()).toBe(1200);
    const last = (await audit.query({ limit: 1 }))[0]!;
    expect(last.durationMs).toBe(1200);
    // Durations are kept to the microsecond.
    recorder.record({ ...row(0), durationMs: 12.3456789, ttfbMs: 0.0004 });
    const fine = (await audit.query({ limit: 1 }))[0]!;
    expect([fine.durationMs, fine.ttfbMs]).toEqual([12.346, 0]);
    expect(await audit.totals("t1")).toEqual({ requests: 600, input: 1800, output: 1200, cacheRead: 0, cacheWrite: 0 });
    recorder.record(row(5000));
    recorder.flush(); // what the proxy's thread does when it stops, before the trail stops
    await audit.stop();
    expect((db.query("SELECT SUM(n) AS n FROM audit_batches").get() as { n: number }).n).toBe(1202);
  });
});

test("each row keeps its hop and lazy's own time both ways; a batch stored before those columns reads them as unknown", async () => {
  await inStore(async (db) => {
    const { audit, recorder } = trail(db, logger().log);
    recorder.record({ ...row(1), hop: 2, lazyInMs: 0.1234567, lazyOutMs: 0.05 });
    const [got] = await audit.query({ limit: 1 });
    expect([got!.hop, got!.lazyInMs, got!.lazyOutMs]).toEqual([2, 0.123, 0.05]);
    // A batch as the store held it before: 11 numbers a row.
    const old = new Float64Array([Date.now(), 503, 7, 2, 10, 20, 3, 2, 0, 0, 1]);
    db.query("INSERT INTO audit_batches (id, n, first_at, last_at, numbers, strings, tbl) VALUES (?, 1, ?, ?, ?, ?, ?)").run(
      100,
      old[0]!,
      old[0]!,
      new Uint8Array(old.buffer),
      new Uint8Array(new Int32Array([-1, -1, -1, -1, -1, 0, 1, 2, -1]).buffer),
      JSON.stringify(["https://api.anthropic.com", "POST", "/v1/messages"]),
    );
    const [was] = await audit.query({ limit: 1 });
    expect(was).toMatchObject({
      id: 100,
      status: 503,
      durationMs: 7,
      retries: 1,
      hop: 0,
      lazyInMs: null,
      lazyOutMs: null,
      path: "/v1/messages",
    });
    await audit.stop();
  });
});

test("rows are stored in batches: the row bound cuts through one and keeps its newer rows, in order", async () => {
  await inStore(async (db) => {
    const { audit, recorder } = trail(db, logger().log, 650);
    for (let i = 0; i < 1200; i++) recorder.record(row(i, i % 3 === 0 ? "t3" : null));
    expect(await audit.count()).toBe(650);
    const rows = await audit.query({ limit: 1000 });
    expect(rows.map((r) => r.durationMs)).toEqual(Array.from({ length: 650 }, (_, k) => 551 + k));
    expect(rows.map((r) => r.id)).toEqual(Array.from({ length: 650 }, (_, k) => rows[0]!.id + k));
    expect(rows.at(-1)).toMatchObject({
      taskId: null,
      method: "POST",
      path: "/v1/messages",
      status: 200,
      ttfbMs: 0.5,
      usage: { input: 3, output: 2 },
      note: null,
    });
    // Batches of 500, 500 and 200 went in: the first is gone, the bound cut through the second.
    expect(db.query("SELECT n FROM audit_batches ORDER BY id").all()).toEqual([{ n: 450 }, { n: 200 }]);
    // One task's newest rows, across the batches that hold any.
    const t3 = await audit.query({ taskId: "t3", limit: 4 });
    expect(t3.map((r) => [r.taskId, r.durationMs])).toEqual([
      ["t3", 1189],
      ["t3", 1192],
      ["t3", 1195],
      ["t3", 1198],
    ]);
    expect(await audit.query({ taskId: "nobody" })).toEqual([]);
    expect(await audit.totals("t3")).toMatchObject({ requests: 400, input: 1200 });
    await audit.stop();
  });
});

test("the age bound drops old rows from a batch that also holds new ones, and whole old batches", async () => {
  await inStore(async (db) => {
    const { audit, recorder } = trail(db, logger().log);
    const old = Date.now() - 31 * 86_400_000;
    for (let i = 0; i < 10; i++) recorder.record({ ...row(i), at: old, note: "old" });
    recorder.flush();
    for (let i = 10; i < 20; i++) recorder.record({ ...row(i), at: i % 2 ? old : Date.now(), note: i % 2 ? "old" : "new" });
    expect(await audit.count()).toBe(20);
    audit.prune();
    expect(await audit.count()).toBe(5);
    const rows = await audit.query();
    expect(rows.map((r) => [r.note, r.durationMs])).toEqual([11, 13, 15, 17, 19].map((d) => ["new", d]));
    expect((db.query("SELECT COUNT(*) AS n FROM audit_batches").get() as { n: number }).n).toBe(1);
    await audit.stop();
  });
});

test("refusals of callers lazy cannot attribute are counted, never rows: a flood of them evicts no row, and their lines keep their own bound", async () => {
  await inStore(async (db) => {
    const { log } = logger();
    const { audit, recorder } = trail(db, log, 100, 100);
    for (let i = 0; i < 100; i++) recorder.record(row(i, "t1"));
    // One reading of the clock: two could straddle a millisecond and miss the minute by one.
    const now = Date.now();
    const minute = now - (now % 60_000) - 180_000;
    const at = minute + 5_000;
    const refusal = (k: number) => ({
      at: at + (k % 100_000),
      from: "10.213.4.2",
      reason: "no credential",
      status: 401,
      taskId: null,
      taskRef: null,
      method: "POST",
      path: "/v1/messages",
    });
    for (let k = 0; k < 105_000; k++) recorder.refused(refusal(k));
    expect((await audit.query({ taskId: "t1", limit: 1000 })).length).toBe(100);
    expect(await audit.count()).toBe(100);
    const lines = await audit.refusals({ since: at - 60_000 });
    // Five seconds into a minute, over 100 s: that minute and the next, one line each.
    expect(lines.map((l) => [l.minute, l.source, l.reason, l.status, l.count])).toEqual([
      [minute, "10.213.4.2", "no credential", 401, 60_000],
      [minute + 60_000, "10.213.4.2", "no credential", 401, 45_000],
    ]);
    // Distinct sources (a loopback process may use any 127.x address) fill only their own bound.
    for (let k = 0; k < 300; k++) recorder.refused({ ...refusal(k), from: `127.0.${k >> 8}.${k & 255}` });
    await audit.settled();
    audit.prune();
    await audit.settled();
    expect(await audit.count()).toBe(100);
    expect((await audit.refusals({ limit: 10_000 })).length).toBe(100);
    await audit.stop();
  });
});

test("a writer that cannot open the store: the failure is logged and readers are not left waiting", async () => {
  await inStore(async (real, dir) => {
    // The store's path is a folder: the writer's open throws and the worker dies.
    const broken = { filename: dir, query: real.query.bind(real) } as unknown as Database;
    const { lines, log } = logger();
    const { audit, recorder } = trail(broken, log);
    recorder.record(row(1));
    const counted = await Promise.race([audit.count(), Bun.sleep(10_000).then(() => "hung")]);
    expect(counted).toBe(0);
    expect(lines.some((l) => l.startsWith("the audit writer failed"))).toBe(true);
    await audit.stop();
  });
});
