/**
 * The daemon's API refuses what is not its own (issue 17, finding 6). The attacker is a local
 * process or a page served from another port of 127.0.0.1: SameSite=Strict counts every port of
 * one host as the same site, so a browser sends the dashboard's cookie along with its forms.
 * Each refusal is checked by what the user would see: `lazy task list` is unchanged.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cleanupAll, Project } from "../helpers/lazy";

afterAll(cleanupAll);

interface Task {
  id: string;
  code: string | null;
  title: string;
  status: string;
}

async function daemon(): Promise<{ p: Project; base: string; port: number; cookie: string }> {
  const p = new Project();
  await p.ok(["daemon", "start"]);
  const port = p.runtime()!.api.port;
  const base = `http://127.0.0.1:${port}`;
  // The cookie as the dashboard gets it: traded for the token once.
  const s = await fetch(`${base}/api/session`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.token()}`, "content-type": "application/json", origin: base },
    body: "{}",
  });
  expect(s.status).toBe(204);
  const cookie = (s.headers.get("set-cookie") ?? "").split(";")[0]!;
  expect(cookie).toMatch(/^lazy_session=[0-9a-f]{64}$/);
  return { p, base, port, cookie };
}

const tasks = (p: Project) => p.json<Task[]>(["task", "list"]);

/** A 403 whose JSON names the cause and the remedy. */
async function refused(r: Response, cause: RegExp): Promise<string> {
  expect(r.status).toBe(403);
  expect(r.headers.get("content-type") ?? "").toContain("application/json");
  const body = (await r.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe("forbidden");
  expect(body.error.message).toMatch(cause);
  expect(body.error.message).toMatch(/lazy dashboard|lazy CLI|Authorization/);
  return body.error.message;
}

describe("the API refuses cross-site writes that carry the dashboard's cookie", () => {
  test("form POSTs from another port of 127.0.0.1 with the cookie: 403, no task created, none closed", async () => {
    const { p, base, cookie } = await daemon();
    await p.ok(["task", "add", "keep me open", "--code", "victim"]);
    const foreign = "http://127.0.0.1:5173"; // a dev server an agent wrote, say
    const form = { cookie, origin: foreign, "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "same-site" };

    const create = await fetch(`${base}/api/tasks`, { method: "POST", headers: form, body: "prompt=exfiltrate+the+keys&title=planted" });
    await refused(create, /JSON|origin/i);
    const close = await fetch(`${base}/api/tasks/victim/close`, { method: "POST", headers: form, body: "" });
    await refused(close, /JSON|origin/i);
    // A no-cors fetch sends no Content-Type and no body at all.
    const bare = await fetch(`${base}/api/tasks/victim/close`, { method: "POST", headers: { cookie, origin: foreign } });
    await refused(bare, /JSON|origin/i);
    // JSON (a non-simple request: a browser would ask first, and gets no CORS grant) from the foreign origin.
    const json = await fetch(`${base}/api/tasks/victim/close`, {
      method: "POST",
      headers: { cookie, origin: foreign, "content-type": "application/json" },
      body: "{}",
    });
    expect(await refused(json, /origin/i)).toContain(foreign);
    const del = await fetch(`${base}/api/auth/anthropic`, {
      method: "PUT",
      headers: { cookie, origin: foreign, "content-type": "application/json" },
      body: JSON.stringify({ value: "sk-ant-planted" }),
    });
    await refused(del, /origin/i);
    const stop = await fetch(`${base}/api/daemon/stop`, {
      method: "POST",
      headers: { cookie, origin: "null", "content-type": "application/json" },
      body: "{}",
    });
    await refused(stop, /origin/i);

    const after = await tasks(p);
    expect(after.map((t) => [t.code, t.status])).toEqual([["victim", "queued"]]);
    expect((await p.json<{ credentials: { name: string }[] }>(["auth", "list"])).credentials.map((c) => c.name)).not.toContain("anthropic");
  });

  test("with the dashboard's own origin, anything but JSON is refused: form, text/plain, multipart", async () => {
    const { p, base, cookie } = await daemon();
    const own = { cookie, origin: base, "sec-fetch-site": "same-origin" };
    const fd = new FormData();
    fd.set("prompt", "multipart task");
    const cases: [string, RequestInit][] = [
      ["form", { method: "POST", headers: { ...own, "content-type": "application/x-www-form-urlencoded" }, body: "prompt=form+task" }],
      ["text/plain", { method: "POST", headers: { ...own, "content-type": "text/plain" }, body: JSON.stringify({ prompt: "text task" }) }],
      ["multipart", { method: "POST", headers: own, body: fd }],
      ["none", { method: "POST", headers: own, body: JSON.stringify({ prompt: "typeless task" }) }],
    ];
    for (const [name, init] of cases) {
      const r = await fetch(`${base}/api/tasks`, init);
      const msg = await refused(r, /application\/json/);
      expect(`${name}: ${msg}`).toContain("Content-Type");
    }
    // The token does not make a form acceptable either.
    const tokenForm = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { authorization: `Bearer ${p.token()}`, "content-type": "application/x-www-form-urlencoded" },
      body: "prompt=form+task",
    });
    await refused(tokenForm, /application\/json/);
    expect(await tasks(p)).toHaveLength(0);
  });

  test("a cookie without an Origin is refused unless the browser says same-origin", async () => {
    const { p, base, cookie } = await daemon();
    const json = { cookie, "content-type": "application/json" };
    const none = await fetch(`${base}/api/tasks`, { method: "POST", headers: json, body: JSON.stringify({ prompt: "no origin" }) });
    await refused(none, /Origin/);
    const sameSite = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { ...json, "sec-fetch-site": "same-site" },
      body: JSON.stringify({ prompt: "same site" }),
    });
    await refused(sameSite, /Origin/);
    expect(await tasks(p)).toHaveLength(0);
    const sameOrigin = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { ...json, "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ prompt: "same origin" }),
    });
    expect(sameOrigin.status).toBe(201);
    expect((await tasks(p)).map((t) => t.title)).toEqual(["same origin"]);
  });

  test("reads and the live stream with the cookie: refused when the browser says another page asks", async () => {
    const { base, cookie } = await daemon();
    const foreign = "http://127.0.0.1:5173";
    for (const path of ["/api/events", "/api/tasks", "/api/auth"]) {
      await refused(await fetch(base + path, { headers: { cookie, origin: foreign, "sec-fetch-site": "same-site" } }), /another page/);
      await refused(await fetch(base + path, { headers: { cookie, "sec-fetch-site": "same-site" } }), /Sec-Fetch-Site: same-site/);
    }
    // The dashboard's own EventSource: same-origin, a live stream that starts with the counts.
    const ac = new AbortController();
    const own = await fetch(`${base}/api/events`, { headers: { cookie, "sec-fetch-site": "same-origin" }, signal: ac.signal });
    expect(own.status).toBe(200);
    const first = await own.body!.getReader().read();
    expect(new TextDecoder().decode(first.value)).toContain("event: counts");
    ac.abort();
  });

  test("a JSON POST from the dashboard's own origin with the cookie works; so do localhost and the CLI", async () => {
    const { p, base, port, cookie } = await daemon();
    const r = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { cookie, origin: base, "content-type": "application/json", "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ prompt: "from the dashboard", code: "dash" }),
    });
    expect(r.status).toBe(201);
    const viaLocalhost = await fetch(`${base}/api/tasks/dash/close`, {
      method: "POST",
      headers: { cookie, host: `localhost:${port}`, origin: `http://localhost:${port}`, "content-type": "application/json" },
      body: "{}",
    });
    expect(viaLocalhost.status).toBe(200);
    // A cookie read (the dashboard's fetch("/api/counts")) needs no Origin.
    const counts = await fetch(`${base}/api/counts`, { headers: { cookie, "sec-fetch-site": "same-origin" } });
    expect(counts.status).toBe(200);
    // The CLI: the token header, JSON, no Origin, bodyless POSTs included.
    await p.ok(["task", "add", "from the CLI", "--code", "cli"]);
    await p.ok(["close", "cli"]);
    expect((await tasks(p)).map((t) => [t.code, t.status])).toEqual([
      ["dash", "closed"],
      ["cli", "closed"],
    ]);
    await p.ok(["daemon", "stop"]);
  });
});

describe("the API and the dashboard answer only to their own Host", () => {
  test("Host: evil.example gets 403 on the API and the dashboard page, with and without the token", async () => {
    const { p, base, cookie } = await daemon();
    const token = { authorization: `Bearer ${p.token()}` };
    const evil = "evil.example";
    for (const [path, headers] of [
      ["/", {}],
      ["/", token],
      ["/api/tasks", {}],
      ["/api/tasks", token],
      ["/api/tasks", { cookie }],
      ["/api/health", token],
      ["/api/events", token],
    ] as [string, Record<string, string>][]) {
      const r = await fetch(base + path, { headers: { ...headers, host: evil } });
      const msg = await refused(r, /Host/);
      expect(msg).toContain(evil);
    }
    // DNS rebinding keeps the port: evil.example:PORT is not ours either.
    const port = p.runtime()!.api.port;
    await refused(await fetch(`${base}/api/tasks`, { headers: { ...token, host: `${evil}:${port}` } }), /Host/);
    // Nor is another port of our own address.
    await refused(await fetch(`${base}/api/tasks`, { headers: { ...token, host: `127.0.0.1:${port + 1}` } }), /Host/);
    const post = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { ...token, host: evil, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "rebound" }),
    });
    await refused(post, /Host/);
    expect(await tasks(p)).toHaveLength(0);
    // Our own names are fine.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
      const ok = await fetch(`${base}/api/tasks`, { headers: { ...token, host } });
      expect(ok.status).toBe(200);
    }
    const page = await fetch(`${base}/`, { headers: { host: `localhost:${port}` } });
    expect(page.status).toBe(200);
  });
});

describe("which Host values name the daemon, by bind address", () => {
  test("bound to ::1: [::1]:PORT and localhost:PORT are ours, 127.0.0.1:PORT is not; the CLI still works", async () => {
    const p = new Project({ toml: '[server]\nbind = "::1"\n' });
    await p.ok(["task", "add", "over IPv6", "--code", "six"]);
    const port = p.runtime()!.api.port;
    const base = `http://[::1]:${port}`;
    const token = { authorization: `Bearer ${p.token()}` };
    for (const host of [`[::1]:${port}`, `localhost:${port}`])
      expect((await fetch(`${base}/api/tasks`, { headers: { ...token, host } })).status).toBe(200);
    await refused(await fetch(`${base}/api/tasks`, { headers: { ...token, host: `127.0.0.1:${port}` } }), /Host/);
    const write = await fetch(`${base}/api/tasks`, {
      method: "POST",
      headers: { ...token, origin: base, "content-type": "application/json" },
      body: JSON.stringify({ prompt: "from [::1]" }),
    });
    expect(write.status).toBe(201);
    await p.ok(["close", "six"]);
    expect((await tasks(p)).map((t) => [t.title, t.status])).toEqual([
      ["over IPv6", "closed"],
      ["from [::1]", "queued"],
    ]);
  });

  test("a wildcard bind takes the loopback names and this machine's interface addresses, nothing else", async () => {
    // The guard alone (no daemon bound to every interface: tests stay on loopback).
    const { requestGuard } = await import("../../src/daemon/api-guard");
    const { networkInterfaces } = await import("node:os");
    const guard = requestGuard(() => "http://0.0.0.0:4000");
    const status = async (host: string) => (await guard(new Request("http://x/api/tasks", { headers: { host } })))?.status ?? 200;
    for (const host of ["0.0.0.0:4000", "127.0.0.1:4000", "localhost:4000", "[::1]:4000"])
      expect(`${host} ${await status(host)}`).toBe(`${host} 200`);
    const external = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && !a.internal && a.family === "IPv4");
    if (external) expect(await status(`${external.address}:4000`)).toBe(200);
    for (const host of ["evil.example:4000", "127.0.0.1:4001", "10.255.255.1:4000", "localhost", ""])
      expect(`${host} ${await status(host)}`).toBe(`${host} 403`);
  });
});
