import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { cleanupAll, isAlive, Project, until } from "../helpers/lazy";

afterAll(cleanupAll);

describe("the per-project daemon", () => {
  test("20 concurrent lazy task add on a cold project: one daemon, 20 tasks, no error", async () => {
    const p = new Project();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => p.run(["task", "add", `task number ${i}`, "--json"])));
    for (const r of results) {
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).status).toBe("queued");
    }
    const tasks = await p.json<any[]>(["task", "list"]);
    expect(tasks).toHaveLength(20);
    expect(new Set(tasks.map((t) => t.title)).size).toBe(20);
    // Exactly one daemon became ready for this project, and it is the one still serving.
    const ready = p
      .log()
      .split("\n")
      .filter((l) => l.includes("ready for"));
    expect(ready).toHaveLength(1);
    expect(ready[0]).toContain(`pid ${p.runtime()!.pid}`);
  });

  test("state folder 0700, token 0600, pid and lock files, log", async () => {
    const p = new Project();
    await p.ok(["daemon", "start"]);
    expect(statSync(p.stateDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(p.stateDir, "token")).mode & 0o777).toBe(0o600);
    expect(statSync(join(p.stateDir, "store.db")).mode & 0o777).toBe(0o600);
    const files = readdirSync(p.stateDir);
    for (const f of ["pid", "lock", "daemon.log", "daemon.json", "store.db"]) expect(files).toContain(f);
    expect((await Bun.file(join(p.stateDir, "pid")).text()).trim()).toBe(String(p.runtime()!.pid));
  });

  test("every API route requires the daemon token", async () => {
    const p = new Project();
    await p.ok(["daemon", "start"]);
    const base = `http://127.0.0.1:${p.runtime()!.api.port}`;
    for (const path of ["/api/tasks", "/api/status", "/api/counts", "/api/health", "/api/events"]) {
      const r = await fetch(base + path);
      expect(r.status).toBe(401);
      const wrong = await fetch(base + path, { headers: { authorization: "Bearer nope" } });
      expect(wrong.status).toBe(401);
    }
    const post = await fetch(base + "/api/tasks", {
      method: "POST",
      body: JSON.stringify({ prompt: "sneaky" }),
      headers: { "content-type": "application/json" },
    });
    expect(post.status).toBe(401);
    expect(await p.json<any[]>(["task", "list"])).toHaveLength(0);
    const good = await fetch(base + "/api/tasks", { headers: { authorization: `Bearer ${p.token()}` } });
    expect(good.status).toBe(200);
  });

  test("kill -9 of the daemon: the next command starts a new one and every task is still there", async () => {
    const p = new Project();
    for (const code of ["one-a", "two-b", "three-c"]) await p.ok(["task", "add", `task ${code}`, "--code", code]);
    const before = p.runtime()!.pid;
    process.kill(before, "SIGKILL");
    await until(() => !isAlive(before), 5000, "the daemon to die");
    const tasks = await p.json<any[]>(["task", "list"]);
    expect(tasks.map((t) => t.code)).toEqual(["one-a", "two-b", "three-c"]);
    const after = p.runtime()!.pid;
    expect(after).not.toBe(before);
    expect(isAlive(after)).toBe(true);
  });

  test("status, logs, stop and restart", async () => {
    const p = new Project();
    const idle = await p.ok(["daemon", "status"]);
    expect(idle.stdout).toContain("not running");
    const before = Date.now();
    await p.ok(["daemon", "start"]);
    const s = await p.ok(["daemon", "status"]);
    const pid = p.runtime()!.pid;
    expect(s.stdout).toContain(`running (pid ${pid}`);
    expect(s.stdout).toContain("version 0.");
    expect(s.stdout).toMatch(/Dashboard: http:\/\/127\.0\.0\.1:\d+\//);
    expect(s.stdout).toMatch(/Proxy:\s+http:\/\/127\.0\.0\.1:\d+ \(ready\)/);
    expect(s.stdout).toContain("Config:    ok");
    const js = await p.json(["daemon", "status"]);
    expect(js).toMatchObject({ running: true, pid, proxy: { state: "ready" }, config: { state: "ok" } });
    // Up since this test started it: more than nothing (two commands ran since), no longer than that.
    expect(js.uptimeMs).toBeGreaterThan(0);
    expect(js.uptimeMs).toBeLessThanOrEqual(Date.now() - before);

    const logs = await p.ok(["daemon", "logs"]);
    expect(logs.stdout).toContain("ready for");

    await p.ok(["daemon", "restart"]);
    const pid2 = p.runtime()!.pid;
    expect(pid2).not.toBe(pid);
    expect(isAlive(pid)).toBe(false);

    const stopped = await p.ok(["daemon", "stop"]);
    expect(stopped.stdout).toContain(`Stopped the daemon (pid ${pid2})`);
    expect(isAlive(pid2)).toBe(false);
    expect((await p.ok(["daemon", "status"])).stdout).toContain("not running");
  });

  test("[server] web = false: no dashboard, status says Web: off", async () => {
    const p = new Project({ toml: "[server]\nweb = false\n" });
    await p.ok(["daemon", "start"]);
    const s = await p.ok(["daemon", "status"]);
    expect(s.stdout).toContain("Web:       off");
    expect(s.stdout).not.toContain("Dashboard:");
    const page = await fetch(`http://127.0.0.1:${p.runtime()!.api.port}/`);
    expect(page.status).toBe(404);
    const d = await p.run(["dashboard"]);
    expect(d.code).not.toBe(0);
    expect(d.stderr).toContain("dashboard is off");
  });

  test("the daemon binds loopback and probes upward when its port is taken", async () => {
    const blocker = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("not lazy") });
    const p = new Project({ toml: `[server]\nport = ${blocker.port}\n` });
    await p.ok(["daemon", "start"]);
    const rt = p.runtime()!;
    expect(rt.api.host).toBe("127.0.0.1");
    expect(rt.api.port).toBeGreaterThan(blocker.port!);
    blocker.stop(true);
  });
});

describe("lazy.toml and the daemon", () => {
  test("three mistakes print three lines; a valid edit is picked up; a broken one keeps the last good config; restart refuses", async () => {
    const bad = ["[server]", 'port = "high"', "", "[models.roles]", "agent = 7", "", "[container]", 'imag = "x"'].join("\n");
    const p = new Project({ toml: bad });
    const r = await p.run(["task", "list"]);
    expect(r.code).not.toBe(0);
    const lines = r.stderr
      .trim()
      .split("\n")
      .filter((l) => l.includes("lazy.toml:"));
    expect(lines).toEqual([
      "  lazy.toml:2:8 server.port — expected a number, got a string",
      "  lazy.toml:5:9 models.roles.agent — expected a string, got a number",
      "  lazy.toml:8:1 container.imag — unknown key (expected one of: image, dockerfile, base, setup, allow_metadata, inherit_network_env, limits, build_network, network, allow, allow_defaults)",
    ]);
    expect(p.runtime()).toBeUndefined();

    // Fixed: the daemon starts; tasks use the default profile.
    p.writeToml('[models.roles]\nagent = "claude"\n');
    expect((await p.json(["task", "add", "first"])).profile).toBe("claude");

    // A valid edit is picked up by the running daemon.
    p.writeToml('[models.roles]\nagent = "codex"\n');
    await until(
      async () => (await p.json(["daemon", "status"])).config.loadedAt && (await p.json(["task", "add", "probe"])).profile === "codex",
      10_000,
      "the edit to be picked up",
    );

    // A broken edit: the daemon keeps serving on the last good config and says so.
    const pid = p.runtime()!.pid;
    p.writeToml('[models.roles]\nagent = "codex"\n\n[proxy]\nport = -1\n');
    const st = await until(
      async () => {
        const s = await p.json(["daemon", "status"]);
        return s.config.state === "broken" ? s : undefined;
      },
      10_000,
      "the daemon to notice the broken file",
    );
    expect(st.config.problems).toEqual(["lazy.toml:5:8 proxy.port — expected a number ≥ 0"]);
    expect((await p.ok(["daemon", "status"])).stdout).toContain("serving the last good config");
    expect((await p.json(["task", "add", "still served"])).profile).toBe("codex");
    expect(p.runtime()!.pid).toBe(pid);
    expect(p.log()).toContain("lazy.toml:5:8 proxy.port");

    // A restart refuses, with the place.
    const rs = await p.run(["daemon", "restart"]);
    expect(rs.code).not.toBe(0);
    expect(rs.stderr).toContain("lazy.toml:5:8 proxy.port — expected a number ≥ 0");
    expect(isAlive(pid)).toBe(false);
    expect((await p.ok(["daemon", "status"])).stdout).toContain("not running");
  });
});
