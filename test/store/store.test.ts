import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Audit } from "../../src/proxy/audit";
import { canMove, Memory, open, STATUSES, Tasks } from "../../src/store";
import { MIGRATIONS } from "../../src/store/migrations";
import type { LazyError } from "../../src/util/errors";

const fresh = () => open(join(mkdtempSync(join(tmpdir(), "lazy-store-")), "store.db"));

describe("task store", () => {
  test("WAL mode and migrations recorded", () => {
    const db = fresh();
    expect((db.query("PRAGMA journal_mode").get() as any).journal_mode).toBe("wal");
    expect((db.query("PRAGMA user_version").get() as any).user_version).toBeGreaterThan(0);
  });

  test("statuses move only along the written rules", () => {
    const db = fresh();
    const t = Tasks.add(db, { prompt: "do it", profile: "claude" });
    expect(() => Tasks.move(db, t.id, "done")).toThrow(/queued; it can move to running, failed, waiting, rejected, closed, not done/);
    expect(Tasks.move(db, t.id, "running").status).toBe("running");
    expect(Tasks.move(db, t.id, "done").status).toBe("done");
    expect(Tasks.move(db, t.id, "running").status).toBe("running");
    expect(Tasks.move(db, t.id, "waiting").status).toBe("waiting");
    expect(Tasks.move(db, t.id, "accepted").status).toBe("accepted");
    expect(() => Tasks.move(db, t.id, "running")).toThrow(/session has ended/);
    const kinds = Tasks.events(db, t.id).map((e) => e.kind);
    expect(kinds).toEqual(["created", "status", "status", "status", "status", "status"]);
    for (const s of ["accepted", "rejected", "closed"] as const) for (const to of STATUSES) expect(canMove(s, to)).toBe(false);
  });

  test("an ambiguous hex prefix is an error listing the candidates", () => {
    const db = fresh();
    const now = Date.now();
    for (const id of ["abcd1111", "abcd2222", "abce3333"])
      db.query(
        "INSERT INTO tasks (id, code, title, prompt, status, profile, created_at, updated_at) VALUES (?, NULL, ?, 'p', 'queued', 'claude', ?, ?)",
      ).run(id, `task ${id}`, now, now);
    let err: LazyError | undefined;
    try {
      Tasks.resolve(db, "abcd");
    } catch (e) {
      err = e as LazyError;
    }
    expect(err?.code).toBe("ambiguous");
    expect(err?.message).toContain('"abcd" matches 2 tasks');
    expect(err?.details.join("\n")).toContain("abcd1111");
    expect(err?.details.join("\n")).toContain("abcd2222");
    expect(Tasks.resolve(db, "abce").id).toBe("abce3333");
    expect(Tasks.resolve(db, "abcd2").id).toBe("abcd2222");
  });

  test("counts by status", () => {
    const db = fresh();
    const a = Tasks.add(db, { prompt: "a", profile: "claude" });
    Tasks.add(db, { prompt: "b", profile: "claude" });
    Tasks.move(db, a.id, "running");
    const c = Tasks.counts(db);
    expect(c.queued).toBe(1);
    expect(c.running).toBe(1);
    expect(c.done).toBe(0);
  });
});

describe("migrations", () => {
  test("an audit trail stored a row per request is readable, in order, after the move to batches", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "lazy-store-")), "store.db");
    const before = MIGRATIONS.findIndex((m) => typeof m === "function" && String(m).includes("CREATE TABLE audit_batches"));
    const old = new Database(file, { create: true, strict: true });
    for (const m of MIGRATIONS.slice(0, before)) old.exec(m as string);
    old.exec(`PRAGMA user_version = ${before}`);
    const insert = old.query(
      "INSERT INTO audit (at, task_id, task_ref, role, profile, credential, upstream, method, path, status, duration_ms, ttfb_ms, bytes_in, bytes_out, input_tokens, output_tokens, cache_read, cache_write, retries, note) VALUES (?, ?, ?, 'agent', 'claude', 'anthropic', 'https://api.anthropic.com', 'POST', ?, ?, ?, ?, 10, 20, ?, ?, 0, 0, ?, ?)",
    );
    old.transaction(() => {
      for (let i = 1; i <= 1203; i++)
        insert.run(
          1_700_000_000_000 + i,
          i % 2 ? "t1" : null,
          i % 2 ? "fix-it" : null,
          `/v1/messages?n=${i}`,
          i === 7 ? 401 : 200,
          i + 0.5,
          i === 7 ? null : 0.25,
          i === 7 ? null : 3,
          i === 7 ? null : 2,
          i === 9 ? 1 : 0,
          i === 7 ? "unknown or revoked placeholder" : null,
        );
    })();
    old.close();

    const db = open(file);
    // The trail packs the old rows when it opens (proxy/audit/store.ts packLegacy).
    const audit = new Audit(db, () => ({ maxRows: 100_000, maxAgeDays: 100_000 }), {
      debug() {},
      info() {},
      warn() {},
      error() {},
    } as never);
    expect(db.query("SELECT name FROM sqlite_master WHERE name = 'audit'").all()).toEqual([]);
    expect(await audit.count()).toBe(1203);
    const rows = await audit.query({ limit: 2000 });
    expect(rows.map((r) => r.path)).toEqual(Array.from({ length: 1203 }, (_, k) => `/v1/messages?n=${k + 1}`));
    expect(rows[6]).toMatchObject({
      at: 1_700_000_000_007,
      taskId: "t1",
      taskRef: "fix-it",
      status: 401,
      durationMs: 7.5,
      ttfbMs: null,
      usage: null,
      note: "unknown or revoked placeholder",
    });
    expect(rows[8]).toMatchObject({
      retries: 1,
      usage: { input: 3, output: 2, cacheRead: 0, cacheWrite: 0 },
      bytesIn: 10,
      bytesOut: 20,
      credential: "anthropic",
    });
    expect((await audit.query({ taskId: "t1", limit: 1 }))[0]!.path).toBe("/v1/messages?n=1203");
    await audit.stop();
    db.close();
  });
});

describe("project memory: who wrote a note", () => {
  test("notes compacted before the rule count as a person's; a compaction never touches a person's note; people's notes are handed over first", () => {
    const file = join(mkdtempSync(join(tmpdir(), "lazy-store-")), "store.db");
    const before = MIGRATIONS.findIndex((m) => typeof m === "string" && m.includes("SET by = 'human'"));
    const old = new Database(file, { create: true, strict: true });
    for (const m of MIGRATIONS.slice(0, before)) typeof m === "string" ? old.exec(m) : m(old);
    old.exec(`PRAGMA user_version = ${before}`);
    old.exec(
      "INSERT INTO memory (at, text, task_id, by) VALUES (1, 'compacted long ago', NULL, 'lazy'), (2, 'an agent said so', 't1', 'agent')",
    );
    old.close();

    const db = open(file);
    expect(Memory.list(db).map((n) => [n.text, n.by])).toEqual([
      ["compacted long ago", "human"],
      ["an agent said so", "agent"],
    ]);
    // Agents' notes flood memory: the people's are still handed over, and never compacted.
    for (let i = 0; i < 10; i++) Memory.add(db, `flood ${i} ${"y".repeat(1500)}`, "agent", "t1");
    const handed = Memory.within(db, Memory.BOUND);
    expect(handed[0]!.text).toBe("compacted long ago");
    expect(handed.map((n) => Memory.forAgent(n)).at(-1)).toStartWith("(unverified, written by an agent) flood 9");
    const upTo = Memory.compactable(db).at(-1)!.id;
    expect(Memory.compactable(db).some((n) => n.by === "human")).toBe(false);
    Memory.replaceUpTo(db, upTo, ["agents wrote ten floods"]);
    expect(Memory.list(db).map((n) => [n.text, n.by])).toEqual([
      ["compacted long ago", "human"],
      ["agents wrote ten floods", "lazy"],
    ]);
  });
});
