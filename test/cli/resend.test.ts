/**
 * The CLI sends a write to the daemon twice only when the first surely did nothing. Its first
 * request goes to the daemon the record names, unchecked (no health round trip): when that
 * fails, a read may be asked again of a fresh daemon, but a write (lazy task add, lazy run,
 * lazy ask) whose connection was cut after it was sent may have been done — a second `lazy ask`
 * call, a second task — so it is said, not sent again. Nothing listening at all is the one case
 * a write goes to a fresh daemon. The record is believed only while its pid holds the daemon's
 * lock (daemon/state.ts isDaemon), so this test, playing the daemon, holds it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { HELD } from "../../src/daemon/keeper";
import { tryLock } from "../../src/util/flock";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(() => cleanupAll());

describe("a write whose daemon went away", () => {
  test("cut after it was sent: said, not sent again; with nothing listening: sent to a fresh daemon, once", async () => {
    const p = new Project();
    await p.ok(["task", "list"]);
    const record = p.runtime()!;
    await p.ok(["daemon", "stop"]);

    // Where the record says the daemon is, something takes the request and drops the connection,
    // as a daemon killed while it worked on it does; the record's pid is alive (this test's) and
    // holds the daemon's lock.
    let posts = 0;
    const lock = tryLock(join(p.stateDir, "lock"))!;
    expect(lock).toBeDefined();
    const cut = Bun.listen({
      hostname: record.api.host,
      port: record.api.port,
      socket: {
        data(s, d) {
          if (d.toString("latin1").startsWith("POST ")) posts++;
          s.terminate();
        },
      },
    });
    const writeRecord = () =>
      writeFileSync(join(p.stateDir, "daemon.json"), JSON.stringify({ ...record, pid: process.pid }), { mode: 0o600 });
    writeRecord();
    try {
      const r = await p.run(["task", "add", "made at most once"]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("The daemon stopped answering");
      expect(r.stderr).toContain("lazy did not send it again: the daemon may have done it, or part of it, before it stopped");
      expect(posts).toBe(1);
    } finally {
      cut.stop(true);
      lock.release();
    }
    // The record still names a live pid, but it is no daemon (it holds no lock) and nothing
    // listens: the write reached no daemon, so the CLI starts one and sends it there.
    writeRecord();
    const added = await p.run(["task", "add", "made once", "--code", "once"]);
    expect(added.code, added.stderr).toBe(0);
    const tasks = await p.json<{ code: string; prompt: string }[]>(["task", "list"]);
    expect(tasks.map((t) => t.code)).toEqual(["once"]);
    expect(p.runtime()!.pid).not.toBe(process.pid);
  }, 120_000);

  test("the keeper holding the port while a daemon comes back answers that nothing was done: the write goes to a daemon, once", async () => {
    const p = new Project();
    await p.ok(["task", "list"]);
    const record = p.runtime()!;
    await p.ok(["daemon", "stop"]);
    // What the keeper answers on a port it holds (daemon/keeper.ts), on the record's port. The
    // daemon the record names died just after the CLI found it holding its lock: the lock goes
    // as the keeper's answer goes out.
    const lock = tryLock(join(p.stateDir, "lock"))!;
    expect(lock).toBeDefined();
    let answered = 0;
    const held = Bun.listen({
      hostname: record.api.host,
      port: record.api.port,
      socket: {
        open: (s) => {
          answered++;
          lock.release();
          s.end(HELD);
        },
        data() {},
      },
    });
    writeFileSync(join(p.stateDir, "daemon.json"), JSON.stringify({ ...record, pid: process.pid }), { mode: 0o600 });
    try {
      const added = await p.run(["task", "add", "made in the gap", "--code", "gap"]);
      expect(added.code, added.stderr).toBe(0);
    } finally {
      held.stop(true);
      lock.release();
    }
    expect(answered).toBe(1);
    expect((await p.json<{ code: string }[]>(["task", "list"])).map((t) => t.code)).toEqual(["gap"]);
  }, 120_000);
});
