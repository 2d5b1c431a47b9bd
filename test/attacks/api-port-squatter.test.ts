/**
 * Another local user takes the daemon's API port after the daemon died (its keeper gone too),
 * and its process holds the pid daemon.json still names, as a reused pid would: it answers like
 * a daemon, naming that pid. The CLI must send it nothing — not the API token, which would let
 * that user drive this user's daemon once it is back. Before, the CLI's first request went to
 * the record's port unchecked (a live pid was taken for the daemon's), and the squatter's
 * answer, naming that pid, was believed; so it was when the pid went to a process of this user
 * and the port to the squatter. Now the record's pid must be a live process of this user that
 * holds the daemon's lock (daemon/state.ts isDaemon); else the CLI starts a daemon of its own.
 * `lazy daemon stop`, as root, signalled that pid too. Needs root (CI runs as root), to run the
 * squatter as nobody.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { keeperPid } from "../helpers/fixtures";
import { cleanupAll, isAlive, Project, until } from "../helpers/lazy";

const dir = mkdtempSync(join(tmpdir(), "lazy-squatter-"));
chmodSync(dir, 0o777);
afterAll(async () => {
  await cleanupAll();
  rmSync(dir, { recursive: true, force: true });
});

/** The squatter: listens on host:port, appends whatever it is sent to a file, answers as a daemon naming its own pid. */
const SQUATTER = `
const [host, port, out] = process.argv.slice(2);
const { appendFileSync } = require("node:fs");
const body = JSON.stringify([]);
// The port is free once the daemon's socket is closed; a few tries cover the kernel's moment.
let listener;
for (let i = 0; !listener; i++) {
  try {
    listener = Bun.listen({ hostname: host, port: Number(port), socket: handlers() });
  } catch (e) {
    if (i >= 50) throw e;
    Bun.sleepSync(100);
  }
}
function handlers() { return {
    data(s, d) {
      appendFileSync(out, Buffer.from(d).toString("latin1"));
      s.write("HTTP/1.1 200 OK\\r\\nx-lazy-pid: " + process.pid + "\\r\\ncontent-type: application/json\\r\\ncontent-length: " + body.length + "\\r\\nconnection: close\\r\\n\\r\\n" + body);
      s.end();
    },
  };
}
appendFileSync(out, "");
setInterval(() => {}, 1000);
`;

describe("another user's process on the daemon's API port, with the pid daemon.json names reused", () => {
  for (const by of ["the squatter", "a process of this user (a shell, an editor)"] as const)
    test(`by ${by}: no token and no signal; the CLI starts a daemon of its own elsewhere and answers from it`, async () => {
      if (process.getuid?.() !== 0) throw new Error("this attack runs the squatter as another user: run the tests as root (CI does)");
      const p = new Project();
      await p.ok(["task", "add", "Mine", "--code", "mine"]);
      const record = p.runtime()!;
      // The daemon dies, its keeper with it (a keeper that gave up): nothing holds the port. The
      // keeper first: one left alive would hold the port itself while it starts another daemon.
      const keeper = await until(() => keeperPid(p), 10_000, "the daemon's keeper");
      process.kill(keeper, "SIGKILL");
      process.kill(record.pid, "SIGKILL");
      await until(() => !isAlive(record.pid) && !isAlive(keeper), 10_000, "the daemon and its keeper to end");

      const script = join(dir, "squatter.js");
      writeFileSync(script, SQUATTER, { mode: 0o644 });
      const out = join(dir, `seen-${by.length}.txt`);
      const squatter = Bun.spawn(
        [
          "setpriv",
          "--reuid=65534",
          "--regid=65534",
          "--clear-groups",
          process.execPath,
          script,
          record.api.host,
          String(record.api.port),
          out,
        ],
        { stdout: "ignore", stderr: "pipe" },
      );
      const bystander = Bun.spawn(["sleep", "300"], { stdout: "ignore", stderr: "ignore" });
      const reused = by === "the squatter" ? squatter.pid : bystander.pid;
      try {
        await until(() => existsSync(out), 10_000, "the squatter to listen").catch(async (e) => {
          squatter.kill("SIGKILL");
          const held = Bun.spawnSync(["ss", "-ltnp", `sport = :${record.api.port}`]).stdout.toString();
          throw new Error(`${e.message}: ${await new Response(squatter.stderr).text()}\n${held}`);
        });
        // daemon.json as the dead daemon left it, but its pid is another process's now.
        const file = join(p.stateDir, "daemon.json");
        writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), pid: reused }));

        const r = await p.run(["task", "list", "--json"]);
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout).map((t: any) => t.code)).toEqual(["mine"]);
        const now = p.runtime()!;
        expect(now.pid).not.toBe(reused);
        expect(now.api.port).not.toBe(record.api.port);
        // Nothing reached the squatter: no token, no request at all.
        expect(readFileSync(out, "latin1")).not.toContain(p.token());
        expect(readFileSync(out, "latin1")).toBe("");
        // Root's lazy daemon stop, with daemon.json naming that pid again: it lives on.
        writeFileSync(file, JSON.stringify({ ...now, pid: reused }));
        const stop = await p.run(["daemon", "stop"]);
        expect(stop.code, stop.stderr).toBe(0);
        expect(isAlive(reused)).toBe(true);
        expect(readFileSync(out, "latin1")).toBe("");
        // Our own daemon went with its keeper, which stop found by its own record and lock.
        await until(() => !isAlive(now.pid), 10_000, "our daemon to stop with its keeper");
      } finally {
        squatter.kill("SIGKILL");
        bystander.kill("SIGKILL");
      }
    }, 120_000);
});
