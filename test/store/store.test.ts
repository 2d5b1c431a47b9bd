import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { open, Tasks, canMove, STATUSES } from "../../src/store";
import { LazyError } from "../../src/util/errors";

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
    expect(() => Tasks.move(db, t.id, "done")).toThrow(/queued; it can move to running, rejected, closed, not done/);
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
      db.query("INSERT INTO tasks (id, code, title, prompt, status, profile, created_at, updated_at) VALUES (?, NULL, ?, 'p', 'queued', 'claude', ?, ?)").run(id, `task ${id}`, now, now);
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
