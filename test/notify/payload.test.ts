/**
 * The notification's words for each kind of move, from a real store file: which moves are told
 * (waiting, done, failed; never running or the session's end), the reason in lazy's words, the
 * message (the turn's summary, else the agent's last message), both bounded to 2000 characters.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "../../src/notify";
import * as Store from "../../src/store";

const dir = mkdtempSync(join(tmpdir(), "lazy-notify-payload-"));
const db = Store.open(join(dir, "store.db"));
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const AT = new Date("2026-12-04T10:00:00.000Z");
function task(code: string) {
  const t = Store.Tasks.add(db, { prompt: `Do ${code}\nin detail`, code, profile: "claude" });
  Store.Tasks.move(db, t.id, "running");
  return t;
}

describe("a notification's body", () => {
  test("done: the task, the status and the turn's summary; no reason", () => {
    const t = task("sum-up");
    Store.Tasks.addEvent(db, t.id, "message", { text: "Working on it." });
    expect(
      build(db, { kind: "status", taskId: t.id, from: "running", to: "done", data: { exit: 0, result: "Fixed the login bug." } }, AT),
    ).toEqual({
      event: "done",
      task: { id: t.id, code: "sum-up", title: "Do sum-up", profile: "claude" },
      status: "done",
      message: "Fixed the login bug.",
      at: "2026-12-04T10:00:00.000Z",
    });
  });

  test("waiting: stopped by the user, or the reason a move names with its detail; the agent's last message", () => {
    const t = task("stopped");
    Store.Tasks.addEvent(db, t.id, "message", { text: "First." });
    Store.Tasks.addEvent(db, t.id, "message", { text: "Halfway through the docs." });
    const stopped = build(
      db,
      { kind: "status", taskId: t.id, from: "running", to: "waiting", data: { exit: null, signal: "SIGTERM", stopped: true } },
      AT,
    )!;
    expect(stopped.reason).toBe("stopped by the user (lazy stop)");
    expect(stopped.message).toBe("Halfway through the docs.");
    const held = build(
      db,
      {
        kind: "status",
        taskId: t.id,
        from: "done",
        to: "waiting",
        data: { reason: "budget", detail: "the task spent $5.02 of its $5.00" },
      },
      AT,
    )!;
    expect(held.reason).toBe("budget: the task spent $5.02 of its $5.00");
  });

  test("failed: lazy's error, else the exit code or signal; text bounded to 2000 characters", () => {
    const t = task("breaks");
    Store.Tasks.addEvent(db, t.id, "message", { text: "x".repeat(5000) });
    const failed = (data: Record<string, unknown>) => build(db, { kind: "status", taskId: t.id, from: "running", to: "failed", data }, AT)!;
    expect(failed({ exit: null, error: "the task's container is gone" }).reason).toBe("the task's container is gone");
    expect(failed({ exit: 2, signal: null }).reason).toBe("the agent exited with code 2");
    expect(failed({ exit: null, signal: "SIGKILL" }).reason).toBe("the agent was ended by SIGKILL");
    expect(failed({ exit: 0, signal: null }).reason).toBe("the agent reported that its turn failed");
    expect(failed({ exit: null, error: "e".repeat(5000) }).reason!.length).toBe(2000);
    const m = failed({ exit: 1 }).message!;
    expect(m.length).toBe(2000);
    expect(m.endsWith("…")).toBe(true);
  });

  test("moves nobody is told about: running, accepted, rejected, closed", () => {
    const t = task("quiet");
    for (const to of ["running", "accepted", "rejected", "closed"] as const)
      expect(build(db, { kind: "status", taskId: t.id, from: "done", to, data: {} }, AT)).toBeUndefined();
  });
});
